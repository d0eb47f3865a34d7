"""What an instructor does in nbgrader's formgrader, opened from JupyterLab's Nbgrader menu.

Formgrader is a set of server-rendered pages shown in an iframe in a JupyterLab tab; its
tables fill in after the page loads (a "Loading, please wait..." row until then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright_api import expect

if TYPE_CHECKING:
    from playwright.sync_api import FrameLocator, Locator, Page

FORMGRADER_FRAME = "#formgrader-iframe iframe"
LOADED_ROWS = "#main-table tr[role='row']"  # rows DataTables has drawn from the loaded data


def open_formgrader(page: Page, server) -> FrameLocator:
    page.goto(server.url("lab?reset"))
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Formgrader", exact=True).click()
    frame = page.frame_locator(FORMGRADER_FRAME)
    expect(frame.locator(LOADED_ROWS).first).to_be_visible()
    return frame


def go_to(frame: FrameLocator, link: str) -> None:
    """Follow a link of formgrader's navigation (or a table) and wait for its table to load.

    Waits for the iframe to leave the page it was on first: until then the old page's rows
    are still visible, and a step that reads them could catch them as they are discarded.
    """
    iframe = frame.owner.element_handle().content_frame()
    was_at = iframe.url
    frame.get_by_role("link", name=link, exact=True).first.click()
    iframe.wait_for_url(lambda url: url != was_at)
    expect(frame.locator(LOADED_ROWS).first).to_be_visible()


def row(frame: FrameLocator, text_selector: str, text: str) -> Locator:
    """The loaded table row in which the element `text_selector` reads exactly `text`.

    `text_selector` names the innermost element holding the text (`td.name a`, not `td.name`):
    `:text-is` matches that element, not its parents.
    """
    rows = frame.locator(f"{LOADED_ROWS}:has({text_selector}:text-is({text!r}))")
    expect(rows).to_have_count(1)
    return rows
