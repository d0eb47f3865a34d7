"""What a student does in JupyterLab, as keyboard and mouse actions on the page.

Cells are found by their place in the notebook: the lab server keeps every cell attached to
the page (see lab_server.LAB_SETTINGS), so the n-th `.jp-Cell` is the notebook's cell n.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from playwright_api import expect, sync_api

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

# Kernel start, a whole Run All and a save are the slowest things waited for.
KERNEL_TIMEOUT_MS = 60_000
RUN_ALL_TIMEOUT_MS = 90_000
# A Run All that JupyterLab took shows a queued ([*]) or new prompt at once; none by then means
# it dropped the command (seen while the kernel's connection was still settling on a busy
# machine: every prompt stayed [ ]), and it is given again once.
RUN_ALL_TAKEN_MS = 30_000

EXECUTED_PROMPT = re.compile(r"^\[(\d+)\]:$")


def open_notebook(page: Page, server, path: str) -> Locator:
    """Open `path` (relative to the server's root) in JupyterLab; wait for an idle kernel."""
    page.goto(server.url(f"lab/tree/{path}"))
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    expect(notebook.locator(".jp-Cell").first).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    wait_for_idle_kernel(page)
    return notebook


def wait_for_idle_kernel(page: Page) -> None:
    indicator = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) "
                             ".jp-Notebook-ExecutionIndicator")
    expect(indicator).to_have_attribute("data-status", "idle", timeout=KERNEL_TIMEOUT_MS)


def cell(notebook: Locator, index: int) -> Locator:
    return notebook.locator(".jp-Cell").nth(index)


def editor_text(cell_locator: Locator) -> str:
    """The source shown in a cell's editor, line by line as CodeMirror holds it."""
    lines = cell_locator.locator(".cm-content .cm-line").all_inner_texts()
    return "\n".join(line.replace("\u200b", "") for line in lines)


def _type_lines(page: Page, text: str) -> None:
    """Type `text` line by line into the focused editor, its contents selected first.

    After each Enter, CodeMirror indents the new line by itself; Shift+Home selects that
    indentation so the typed line (with its own indentation) replaces it. A line's characters
    go in as one text input (what typing a line or pasting it gives the editor), not a key
    event each: the keys that steer the editor (Enter, Shift+Home, Delete) are pressed as keys.
    A locked cell refuses both (test_student_flow types keys into one).
    """
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    for number, line in enumerate(text.split("\n")):
        if number:
            page.keyboard.press("Enter")
            page.keyboard.press("Shift+Home")
            if not line:
                page.keyboard.press("Delete")
        if line:
            page.keyboard.insert_text(line)


def type_code(page: Page, cell_locator: Locator, source: str) -> None:
    """Replace a code cell's source by typing `source` on the keyboard."""
    cell_locator.locator(".cm-content").click()
    _type_lines(page, source)
    page.keyboard.press("Escape")  # back to command mode


def type_markdown(page: Page, cell_locator: Locator, text: str) -> None:
    """Replace a markdown cell's text by typing it, then render the cell."""
    cell_locator.dblclick()
    editor = cell_locator.locator(".cm-content")
    expect(editor).to_be_visible()
    editor.click()
    _type_lines(page, text)
    page.keyboard.press("Shift+Enter")  # render it (and move on, as a student would)


def execution_counts(notebook: Locator) -> list[int | None]:
    """Each code cell's execution count as its prompt shows it (None: not run, or running)."""
    prompts = notebook.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
    return [int(m.group(1)) if (m := EXECUTED_PROMPT.match(p.strip())) else None
            for p in prompts]


# True once every code cell's prompt shows an execution count above `before`.
_ALL_RUN_AFTER = """([selector, before]) => {
    const prompts = [...document.querySelectorAll(selector)];
    return prompts.length > 0 && prompts.every(p => {
        const m = /^\\[(\\d+)\\]:$/.exec(p.textContent.trim());
        return m !== null && Number(m[1]) > before;
    });
}"""
PROMPTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt"


# True once some code cell is queued, running or has run anew.
_ANY_TAKEN_AFTER = """([selector, before]) => [...document.querySelectorAll(selector)].some(p => {
    const m = /^\\[(\\d+|\\*)\\]:$/.exec(p.textContent.trim());
    return m !== null && (m[1] === "*" || Number(m[1]) > before);
})"""


def run_all_cells(page: Page, notebook: Locator) -> None:
    """Run > Run All Cells (given once more if JupyterLab dropped it), then wait until every
    code cell has run anew."""
    before = max(filter(None, execution_counts(notebook)), default=0)
    for attempt in (1, 2):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function(_ANY_TAKEN_AFTER, arg=[PROMPTS, before],
                                   timeout=RUN_ALL_TAKEN_MS)
            break
        except sync_api.TimeoutError:
            if attempt == 2:
                raise
    page.wait_for_function(_ALL_RUN_AFTER, arg=[PROMPTS, before], timeout=RUN_ALL_TIMEOUT_MS)
    wait_for_idle_kernel(page)


def output_text(cell_locator: Locator) -> str:
    return "\n".join(cell_locator.locator(".jp-OutputArea-output").all_inner_texts())


def save(page: Page) -> None:
    """Save with Ctrl+S and wait until the tab no longer shows unsaved changes."""
    page.keyboard.press("Control+s")
    tab = page.locator(".lm-TabBar-tab.jp-mod-current")
    expect(tab).not_to_have_class(re.compile(r"\bjp-mod-dirty\b"), timeout=KERNEL_TIMEOUT_MS)
