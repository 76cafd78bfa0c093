"""The capstone's explorer in real JupyterLab, driven by Debian's Chromium through Playwright."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import lab_harness as lab

pytestmark = pytest.mark.slow  # JupyterLab in Chromium

OUT = lab.ROOT / "test-output" / "browser"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    if not Path(lab.CHROMIUM).exists():
        pytest.fail(f"{lab.CHROMIUM} is missing: .ci/run installs Debian's chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("lab")
    # The solutions: the capstone's explorer then runs complete learner functions.
    with lab.jupyterlab(tmp, lab.ROOT / "solutions" / "mhsa") as base, lab.chromium_page() as page:
        lab.open_and_run_all(page, base, "10_capstone.ipynb")
        yield page


def wait_status(page, text: str) -> None:
    page.wait_for_function(
        "(text) => { const s = document.querySelector('.mhsa-status');"
        " return s !== null && s.textContent.includes(text); }",
        arg=text,
        timeout=60_000,
    )


def test_explorer_heads_and_mask_change_the_heatmap(session):
    page = session
    image, status, button = lab.explorer_parts(page)
    wait_status(page, "h = 2")
    image.wait_for(state="visible", timeout=60_000)
    image.scroll_into_view_if_needed()
    assert "h = 2" in status.text_content()
    shot0 = image.screenshot(path=str(OUT / "0_default.png"))

    ms_heads = lab.click_and_time(page, button("heads", "4"), image)
    wait_status(page, "h = 4")
    assert "h = 4" in status.text_content()
    shot1 = image.screenshot(path=str(OUT / "1_four_heads.png"))
    assert shot1 != shot0

    ms_mask = lab.click_and_time(page, button("mask", "causal"), image)
    wait_status(page, "mask: causal")
    shot2 = image.screenshot(path=str(OUT / "2_four_heads_causal.png"))
    assert shot2 != shot1
    page.screenshot(path=str(OUT / "page.png"), full_page=False)
    for name in ("0_default.png", "1_four_heads.png", "2_four_heads_causal.png"):
        assert (OUT / name).stat().st_size > 1000, name

    # the figures measured here go into the closing note, not into an assertion
    (OUT / "latency.txt").write_text(
        f"click to new decoded image: heads {ms_heads:.0f} ms, mask {ms_mask:.0f} ms\n"
    )
    print(f"\nbrowser latency: heads {ms_heads:.0f} ms, mask {ms_mask:.0f} ms")
