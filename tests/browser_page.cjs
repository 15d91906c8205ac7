// Open a page in a real headless Chromium (puppeteer from scripts/renderer/node_modules through NODE_PATH, driving Debian's
// chromium), wait until the page sets `window.done`, and print `window.results` as JSON.
//
//   node tests/browser_page.cjs URL [TIMEOUT_MS [EXPRESSION]]
//
// With EXPRESSION, print what that JavaScript expression evaluates to in the page (a promise is awaited) instead.
//
// Chromium runs with a fresh profile folder and without background networking, component updates, sync or a
// first run, so that nothing but the page's own requests leaves it.
const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer");

async function main() {
  const [url, timeout = "60000", expression] = process.argv.slice(2);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "browser-page-"));
  const browser = await puppeteer.launch({
    executablePath: process.env.PUPPETEER_EXECUTABLE_PATH || "/usr/bin/chromium",
    headless: true,
    userDataDir: profile,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const page = await browser.newPage();
    page.on("pageerror", (err) => console.error(`page error: ${err}`));
    page.on("console", (message) => console.error(`page console: ${message.text()}`));
    await page.goto(url, { waitUntil: "load" });
    if (expression) {
      console.log(JSON.stringify(await page.evaluate(expression)));
      return;
    }
    await page.waitForFunction("window.done === true", { timeout: Number(timeout) });
    console.log(JSON.stringify(await page.evaluate(() => window.results)));
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
