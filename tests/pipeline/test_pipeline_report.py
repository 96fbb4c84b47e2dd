"""The report page, opened in headless Chromium (Debian's chromium, driven by selenium through
/usr/bin/chromedriver): it renders offline with its charts drawn from the fleet's figures.
A screenshot is kept in var/test-artifacts/pipeline-report.png (git-ignored)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pipeline import commands
from pipeline.readers import directory_source
from pipeline.report import build_report
from pipeline.session import Progress
from tests.pipeline import fleet
from tests.pipeline.conftest import FleetInputs, pipeline_config

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def report_page(spark: SparkSession, fleet_inputs: FleetInputs,
                tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report-out")
    run = commands.Run(spark, Progress(spark, 0), pipeline_config(out), out, fleet.NOW)
    commands.ingest(run, str(fleet_inputs.audit_dir), str(fleet_inputs.snapshot_dir))
    source = directory_source(str(fleet_inputs.sqlite), "")
    entries = commands.load_directory(run, source)
    try:
        return build_report(run, entries, source)
    finally:
        entries.unpersist()


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    for needed in (CHROMIUM, CHROMEDRIVER):
        assert needed.exists(), (f"{needed} is missing: apt-get install -y chromium "
                                 "chromium-driver (bin/test installs them as root)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1200,4200"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def marks(driver: webdriver.Chrome, chart: str) -> int:
    svg = driver.find_element(By.CSS_SELECTOR, f'svg[data-chart="{chart}"]')
    assert svg.get_attribute("data-rendered") == "true", chart
    assert svg.get_attribute("data-error") is None, svg.get_attribute("data-error")
    drawn = len(svg.find_elements(By.CSS_SELECTOR, "g.marks rect, g.marks circle"))
    assert str(drawn) == svg.get_attribute("data-marks")
    return drawn


def test_the_report_renders_offline_with_its_charts(report_page: Path,
                                                    browser: webdriver.Chrome) -> None:
    html = report_page.read_text()
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html  # nothing fetched: styles, data and script are inline
    browser.get(report_page.as_uri())
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-charts-done"))
    # registrations: one bar segment per (interface, GBID) with entries (3 interfaces x 2)
    assert marks(browser, "registrations") == 6
    values = [int(v.get_attribute("data-value") or 0) for v in browser.find_elements(
        By.CSS_SELECTOR, 'svg[data-chart="registrations"] g.marks rect')]
    assert sum(values) == fleet.DIRECTORY_SUMMARY["entries"]
    # stale over time: an hourly point from the first one going stale (26 h ago) to now
    assert marks(browser, "stale") == 27
    # traffic per interface and hour: 4 interfaces over 2 hours, 5 non-zero points; drops: 3
    assert marks(browser, "traffic") == 5
    assert marks(browser, "drops") == 3
    assert marks(browser, "drop-reasons") == 2
    assert marks(browser, "refusals") == 2
    legend = browser.find_element(By.CSS_SELECTOR, 'svg[data-chart="traffic"] + .legend').text
    assert "d.vehicle/test/Radio" in legend and fleet.UNKNOWN in legend
    # the hostile peer is text in a table cell, never markup
    cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#security td")]
    assert fleet.HOSTILE_PEER in cells
    assert browser.find_elements(By.CSS_SELECTOR, "img") == []
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "pipeline-report.png"))
