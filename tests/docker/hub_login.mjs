// A student logs in to the docker cluster's JupyterHub in headless Chromium (Debian's, driven by
// playwright-core, as tests/book/browser_check.mjs does): the login form, then the hub starts
// their server (a Slurm job) and sends the browser to it, until JupyterLab has drawn its shell.
// Called by tests/docker/test_hub.py, which judges what the hub and the cluster say.
//
// usage: node hub_login.mjs '{"base": "http://127.0.0.1:PORT", "user": "bob", "password": "...",
//                             "chromium": "/usr/bin/chromium", "shot": "/abs/file.png"}'
// prints one JSON object: {"url", "title", "seconds" (login to JupyterLab), "listing" (the file
// browser's names), "cookies", "errors"}
import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: cfg.chromium,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
  ],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (err) => errors.push(String(err)));
  await page.goto(`${cfg.base}/hub/login`);
  await page.fill("#username_input", cfg.user);
  await page.fill("#password_input", cfg.password);
  const started = Date.now();
  await page.click("#login_submit");
  // /hub/spawn-pending/USER while the job waits and starts, then the server itself.
  await page.waitForURL(new RegExp(`/user/${cfg.user}/lab`), { timeout: 180000 });
  // JupyterLab drawn, and its file browser lists the student's home (the server reads it as them).
  await page.locator(".jp-DirListing-itemText", { hasText: "labs" }).first().waitFor({ timeout: 120000 });
  const seconds = (Date.now() - started) / 1000;
  const listing = await page.locator(".jp-DirListing-itemText").allInnerTexts();
  await page.screenshot({ path: cfg.shot });
  console.log(JSON.stringify({ url: page.url(), title: await page.title(), seconds, listing,
                               cookies: await context.cookies(), errors }));
} finally {
  await browser.close();
}
