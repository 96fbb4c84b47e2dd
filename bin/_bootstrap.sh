# Sourced by bin/run and bin/test: make sure the machine has what the project needs.
# - Python 3.11+ and a virtual environment at .venv with the project and its test extras
# - the modules compiled with mypyc, built again when their source changes (see ensure_compiled)
# - Debian packages (mosquitto, postgresql, Java 17, JDBC drivers, chromium), installed with apt-get when running as root
# - for bin/test only: node and npm (Debian's nodejs and npm when the commands are missing) and
#   the npm packages the tests use as oracles (tests/oracles: npm ci, again when its package
#   files change); JDK 17, Maven and gcc (Debian's openjdk-17-jdk-headless, maven and gcc when
#   the commands are missing) and the build of joynr's Java oracles (tests/oracles/java: joynr's
#   artifacts from Maven Central, built outside the checkout, again when its sources change)
# Fails with a clear message when something cannot be provided.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
# Java 17 and the JDBC drivers for the pipeline (Spark); chromium for the page tests
DEBIAN_PACKAGES=(mosquitto openssl postgresql openjdk-17-jre-headless libpostgresql-jdbc-java
    libxerial-sqlite-jdbc-java chromium chromium-driver)
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
    for pkg in "${DEBIAN_PACKAGES[@]}"; do
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
    local py stamp want
    py="$(find_python)" || die "Python 3.11 or newer is required (set PYTHON=/path/to/python3.11)"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtual environment at $VENV"
        "$py" -m venv "$VENV" || die "could not create $VENV (on Debian: apt-get install python3-venv)"
    fi
    stamp="$VENV/.installed"
    want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        say "installing Python packages into $VENV"
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[test,pipeline]" ||
            die "pip install failed (see above)"
        echo "$want" >"$stamp"
    fi
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
ensure_compiled
# only the test command needs node and the oracles (bin/test sets BOOTSTRAP_TESTS=1)
if [ "${BOOTSTRAP_TESTS:-0}" = 1 ]; then
    ensure_node
    ensure_oracles
    ensure_java_build
    ensure_java_oracles
fi
