# Sourced by every command of bin/ (cluster-controller, gcd, pipeline, test, build-compiled): makes
# sure the machine has what that program needs, and only that. The command sets BOOTSTRAP_PROGRAM
# before sourcing this file; the sets per program:
#
# program             Python packages (.venv)   Debian packages (apt-get, as root)      compiled codec
# cluster-controller  .[cc]                     none (embedded broker and GCD)           yes
# gcd                 .[gcd]                    none (its broker and PostgreSQL elsewhere) yes
# pipeline            .[pipeline]               Java 17, the JDBC drivers of PostgreSQL   no
#                                               and SQLite
# test                .[test] (every extra)     all of the above, mosquitto, openssl,    yes
#                                               postgresql, chromium; node and npm, a JDK,
#                                               Maven and gcc when missing
# build               .[cc]                     none                                     yes
#
# - Python 3.11+ and a virtual environment at .venv with the project and the program's extras; the
#   stamp .venv/.installed holds the digest of pyproject.toml and the extras installed, so another
#   program's extras are added when it first runs (extras once installed are kept)
# - the modules compiled with mypyc (mypy, and setuptools 77 or newer, which reads this
#   pyproject.toml, are added to .venv for it when missing), built again when their source
#   changes (see ensure_compiled)
# - for the test program only: the npm packages the tests use as oracles (tests/oracles: npm ci,
#   again when its package files change) and the build of joynr's Java oracles
#   (tests/oracles/java: joynr's artifacts from Maven Central, built outside the checkout, again
#   when its sources change)
# Fails with a clear message when something cannot be provided.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
BOOTSTRAP_PROGRAM="${BOOTSTRAP_PROGRAM:-cluster-controller}"
case "$BOOTSTRAP_PROGRAM" in
    cluster-controller | build) EXTRAS=cc DEBIAN_PACKAGES=() COMPILE=1 ;;
    gcd) EXTRAS=gcd DEBIAN_PACKAGES=() COMPILE=1 ;;
    # Java 17 and the JDBC drivers for Spark
    pipeline) EXTRAS=pipeline COMPILE=0
        DEBIAN_PACKAGES=(openjdk-17-jre-headless libpostgresql-jdbc-java libxerial-sqlite-jdbc-java) ;;
    # the brokers, databases and certificates the tests start; chromium for the page tests
    test) EXTRAS=test COMPILE=1
        DEBIAN_PACKAGES=(mosquitto openssl postgresql openjdk-17-jre-headless libpostgresql-jdbc-java
            libxerial-sqlite-jdbc-java chromium chromium-driver) ;;
    *) echo "bootstrap: unknown BOOTSTRAP_PROGRAM=$BOOTSTRAP_PROGRAM" >&2; exit 1 ;;
esac
# node and npm for the oracle tests (tests/oracles); installed only when the commands are missing,
# so a node from elsewhere (which may bring its own npm) is used as it is
NODE_PACKAGES=(nodejs npm)

die() { echo "bootstrap: $*" >&2; exit 1; }
say() { echo "bootstrap: $*" >&2; }

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

# apt_install WHY PACKAGE...: install the Debian packages as root, or fail saying WHY and how
apt_install() {
    local why="$1"
    shift
    if [ "$(id -u)" -ne 0 ]; then
        die "$why; install them (sudo apt-get install -y $*) or run as root"
    fi
    command -v apt-get >/dev/null 2>&1 || die "$why and there is no apt-get on this machine"
    say "installing Debian packages: $*"
    apt-get update -qq >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
        die "apt-get install $* failed"
}

ensure_debian_packages() {
    local missing=() pkg
    for pkg in "${DEBIAN_PACKAGES[@]+"${DEBIAN_PACKAGES[@]}"}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    apt_install "missing Debian packages: ${missing[*]}" "${missing[@]}"
    # the Debian package starts a system broker on 1883; the project starts its own brokers
    if command -v systemctl >/dev/null 2>&1; then systemctl stop mosquitto >/dev/null 2>&1 || true; fi
    # likewise a system PostgreSQL cluster on 5432; tests start their own servers
    if command -v systemctl >/dev/null 2>&1; then systemctl stop postgresql >/dev/null 2>&1 || true; fi
}

ensure_node() {
    command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && return 0
    apt_install "node and npm are missing" "${NODE_PACKAGES[@]}"
}

# JDK, Maven and a C compiler for joynr's Java oracles (tests/oracles/java)
JAVA_BUILD_PACKAGES=(openjdk-17-jdk-headless maven gcc libc6-dev)

ensure_java_build() {
    command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 &&
        command -v gcc >/dev/null 2>&1 && return 0
    apt_install "javac, mvn or gcc is missing (joynr's Java oracles)" "${JAVA_BUILD_PACKAGES[@]}"
}

ensure_java_oracles() {
    say "building joynr's Java oracles if their sources changed (Maven; the first time it downloads joynr's artifacts, about a minute)"
    (cd "$ROOT" && "$VENV/bin/python" -c \
        'from tests.support.java_oracles import build; print("bootstrap: joynr oracles in", build().out)') >&2 ||
        die "building joynr's Java oracles failed (see above)"
}

ensure_oracles() {
    local dir="$ROOT/tests/oracles" stamp want
    stamp="$dir/node_modules/.installed"
    want="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        say "installing the npm packages of tests/oracles"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
            die "npm ci in $dir failed (see above)"
        echo "$want" >"$stamp"
    fi
}

ensure_venv() {
    local py stamp digest have=() want extra
    py="$(find_python)" || die "Python 3.11 or newer is required (set PYTHON=/path/to/python3.11)"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtual environment at $VENV"
        "$py" -m venv "$VENV" || die "could not create $VENV (on Debian: apt-get install python3-venv)"
    fi
    # the stamp: line 1 the digest of pyproject.toml, line 2 the extras installed with it
    stamp="$VENV/.installed"
    digest="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$digest" ]; then
        read -r -a have <<<"$(sed -n 2p "$stamp")" || true
        for extra in "${have[@]+"${have[@]}"}"; do
            # test holds every extra
            [ "$extra" = "$EXTRAS" ] || [ "$extra" = test ] && return 0
        done
    elif [ -f "$stamp" ]; then
        # pyproject.toml changed: install again what was there, and what this program needs (a
        # stamp of one line is from before the extras, when every install was the test one)
        read -r -a have <<<"$(sed -n 2p "$stamp")" || true
        [ ${#have[@]} -gt 0 ] || have=(test)
    fi
    want="$(printf '%s\n' "${have[@]+"${have[@]}"}" "$EXTRAS" | sort -u | paste -sd, -)"
    say "installing Python packages into $VENV: .[$want]"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[$want]" ||
        die "pip install failed (see above)"
    printf '%s\n%s\n' "$digest" "${want//,/ }" >"$stamp"
}

# the modules compiled with mypyc (pyjoynr/runtime/compiled.py says how they are loaded; setup.py
# lists them too and builds them, here in place as in a wheel): each is compiled again when its
# source changes (the editable install of ensure_venv may have built it already); without a C
# compiler and Python's headers (and no root to install them) they run as plain Python, slower,
# and this says so
COMPILED_MODULES=(pyjoynr/runtime/smrf_core.py)

# ensure_compiler: a C compiler and the headers of the virtual environment's Python, or why not
ensure_compiler() {
    local include base
    include="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
    if command -v cc >/dev/null 2>&1 && [ -f "$include/Python.h" ]; then return 0; fi
    base="$("$VENV/bin/python" -c 'import sys; print(sys._base_executable)')"
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1 || [[ "$base" != /usr/bin/* ]]; then
        COMPILER_MISSING="no C compiler (cc) or no Python.h in $include"
        return 1
    fi
    apt_install "a C compiler and Python's headers are missing" gcc \
        "python$("$VENV/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')-dev"
}

ensure_compiled() {
    local src so want suffix log
    suffix="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
    for src in "${COMPILED_MODULES[@]}"; do
        so="$ROOT/${src%.py}$suffix"
        want="$(sha256sum "$ROOT/$src" | cut -d' ' -f1)"
        if [ -f "$so" ] && [ "$(cat "$so.sha256" 2>/dev/null)" = "$want" ]; then continue; fi
        # an old build must not stay: without its digest it would not be loaded, but remove it
        rm -f "$so" "$so.sha256" "$ROOT/${src%.py}__mypyc$suffix"
        if ! ensure_compiler; then
            say "WARNING: $src runs as plain Python (slower): $COMPILER_MISSING"
            continue
        fi
        if [ ! -x "$VENV/bin/mypyc" ] || ! "$VENV/bin/python" -c \
            'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)'; then
            say "installing mypy into $VENV (its mypyc compiles $src)"
            "$VENV/bin/python" -m pip install -q --disable-pip-version-check "mypy>=1.10" \
                "setuptools>=77" ||
                die "pip install mypy failed (see above)"
        fi
        say "compiling $src with mypyc"
        mkdir -p "$ROOT/build"
        log="$ROOT/build/mypyc-$(basename "$src" .py).log"
        # setup.py's build_ext, as a wheel's build: mypyc, then the digest beside the module
        if ! (cd "$ROOT" && env -u PYJOYNR_COMPILED "$VENV/bin/python" setup.py build_ext \
                --inplace) >"$log" 2>&1 || [ "$(cat "$so.sha256" 2>/dev/null)" != "$want" ]; then
            rm -f "$so" "$ROOT/${src%.py}__mypyc$suffix"
            say "WARNING: compiling $src failed (see $log); it runs as plain Python (slower)"
        fi
    done
}

ensure_debian_packages
ensure_venv
if [ "$COMPILE" = 1 ]; then ensure_compiled; fi
# only the test command needs node, the npm oracles and joynr's Java oracles
if [ "$BOOTSTRAP_PROGRAM" = test ]; then
    ensure_node
    ensure_oracles
    ensure_java_build
    ensure_java_oracles
fi
