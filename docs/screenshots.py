"""Screenshots of the Dagster UI for the docs, from a real browser (headless Chromium driven by Playwright).

    python docs/screenshots.py URL_PATH OUT.png [--wait-text TEXT] [--base http://127.0.0.1:3000]

Needs `make ui` running, Playwright (`pip install playwright`) and a Chromium (`/usr/bin/chromium`, or set
CHROMIUM); nothing is downloaded. Used for the pictures under docs/ui/ (see docs/ui/README.md for the steps).
"""

import argparse
import json
import os
import sys
import urllib.request

from playwright.sync_api import sync_playwright

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="page under the UI, e.g. /assets/verdicts")
    ap.add_argument("out", help="PNG file to write")
    ap.add_argument("--base", default="http://127.0.0.1:3000")
    ap.add_argument("--wait-text", action="append", default=[], help="wait until the page shows this text")
    ap.add_argument("--click", action="append", default=[], help="click the first element with this text first")
    ap.add_argument("--filter", help="type this into the metadata filter (e.g. '_tests')")
    ap.add_argument("--width", type=int, default=1500)
    ap.add_argument("--height", type=int, default=2400)
    args = ap.parse_args()
    # The UI's first-visit newsletter dialog would cover the page: mark it seen, as its Skip button does.
    request = urllib.request.Request(
        args.base + "/graphql",
        data=json.dumps({"query": "mutation { setNuxSeen }"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=30).read()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), args=FLAGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(args.base + args.path, wait_until="networkidle", timeout=60_000)
        for text in args.click:
            page.get_by_text(text, exact=True).first.click()
            page.wait_for_load_state("networkidle")
        if args.filter:
            page.get_by_placeholder("Filter metadata keys").fill(args.filter)
        for text in args.wait_text:
            page.get_by_text(text).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        page.screenshot(path=args.out, full_page=True)
        browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
