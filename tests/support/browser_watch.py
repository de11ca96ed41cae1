"""What goes wrong in a console page's scripts, seen from the browser: violations of the
page's Content-Security-Policy (reported on the console by `CSP_REPORTER`, and by Chromium's
own messages), uncaught errors, and every console error."""

from __future__ import annotations

from dataclasses import dataclass

from playwright.sync_api import ConsoleMessage, Page

# Reports each violation of the page's Content-Security-Policy on the console, tagged.
CSP_REPORTER = """document.addEventListener("securitypolicyviolation", (e) => console.error(
  "csp-violation " + e.effectiveDirective + " " + (e.blockedURI || "inline") + " " +
  e.sourceFile + ":" + e.lineNumber));"""


@dataclass
class Troubles:
    """What went wrong in a page's scripts: CSP violations, uncaught errors, console errors."""

    violations: list[str]
    errors: list[str]
    console_errors: list[str]


def watch(page: Page) -> Troubles:
    """Start watching `page` (before its first navigation)."""
    troubles = Troubles([], [], [])
    page.add_init_script(CSP_REPORTER)

    def console(message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        troubles.console_errors.append(f"{message.text} at {page.url}")
        if "csp-violation" in message.text or "Content Security Policy" in message.text:
            troubles.violations.append(f"{message.text} at {page.url}")

    page.on("console", console)
    page.on("pageerror", lambda error: troubles.errors.append(f"{error} at {page.url}"))
    return troubles
