// Open built book pages in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core from npm) with every request outside localhost refused, and report what
// rendered.  Called by tests/book/test_browser.py, which serves the HTML and judges the report.
//
// usage: node browser_check.mjs '{"base": "http://127.0.0.1:PORT/", "pages": ["a.html"],
//                                 "shots": "/abs/dir", "chromium": "/usr/bin/chromium"}'
// prints one JSON object: {"pages": {"a.html": {...}}}
import { chromium } from "playwright-core";
import path from "node:path";
import fs from "node:fs";

const cfg = JSON.parse(process.argv[2]);
const local = new Set(["127.0.0.1", "localhost"]);

const browser = await chromium.launch({
  executablePath: cfg.chromium,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    // No name resolves except localhost: a page that needs the internet cannot get it.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
  ],
});

const report = { pages: {} };
fs.mkdirSync(cfg.shots, { recursive: true });
for (const page_name of cfg.pages) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const r = { external: [], failed: [], console_errors: [], page_errors: [] };
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || url.protocol === "blob:" || local.has(url.hostname)) return route.continue();
    r.external.push(route.request().url());
    return route.abort();
  });
  page.on("requestfailed", (req) => r.failed.push(req.url()));
  page.on("response", (res) => { if (res.status() >= 400) r.failed.push(`${res.status()} ${res.url()}`); });
  page.on("console", (msg) => { if (msg.type() === "error") r.console_errors.push(msg.text()); });
  page.on("pageerror", (err) => r.page_errors.push(String(err)));
  const t0 = Date.now();
  await page.goto(cfg.base + page_name, { waitUntil: "load" });
  // Widgets: the manager replaces each saved view with live DOM; wait for their images.
  const expectWidgets = await page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count();
  r.widget_views_saved = expectWidgets;
  if (expectWidgets > 0) {
    try {
      await page.waitForFunction((n) => document.querySelectorAll(".widget-output img").length >= n, expectWidgets,
                                 { timeout: 20000 });
    } catch (e) { r.wait_error = String(e).split("\n")[0]; }
  }
  const hasMath = await page.locator(".math").count();
  if (hasMath > 0) {
    try { await page.waitForSelector("mjx-container", { timeout: 15000 }); }
    catch (e) { r.math_error = String(e).split("\n")[0]; }
  }
  await page.waitForTimeout(300);
  Object.assign(r, await page.evaluate(() => {
    const imgs = (sel) => Array.from(document.querySelectorAll(sel));
    const ok = (img) => img.complete && img.naturalWidth > 0;
    return {
      title: document.title,
      widget_roots: document.querySelectorAll(".jupyter-widgets").length,
      widget_controls: document.querySelectorAll(".widget-inline-hbox, .widget-toggle-buttons, .widget-text, .widget-dropdown, .widget-checkbox").length,
      widget_images: imgs(".widget-output img").filter(ok).length,
      widget_image_sizes: imgs(".widget-output img").filter(ok).map((i) => [i.naturalWidth, i.naturalHeight]),
      static_images: imgs(".cell_output img").filter((i) => ok(i) && !i.closest(".widget-output")).length,
      broken_images: imgs("img").filter((i) => !ok(i)).map((i) => i.currentSrc || i.src).slice(0, 5),
      math_rendered: document.querySelectorAll("mjx-container").length,
      math_source: document.querySelectorAll(".math").length,
      unrendered_widget_placeholders: Array.from(document.querySelectorAll("script[type='application/vnd.jupyter.widget-view+json']"))
        .filter((s) => !s.parentElement.querySelector(".jupyter-widgets")).length,
    };
  }));
  r.ms = Date.now() - t0;
  const shot = path.join(cfg.shots, page_name.replace(/[^A-Za-z0-9_.-]/g, "_") + ".png");
  await page.screenshot({ path: shot, fullPage: true });
  r.screenshot = shot;
  report.pages[page_name] = r;
  await context.close();
}
await browser.close();
process.stdout.write(JSON.stringify(report));
