#!/usr/bin/env node
// Takes a PNG screenshot of a running adapter's status page with Debian's Chromium (through
// playwright-core, which downloads no browser of its own): the README's docs/status-page.png
// comes from `npm start` (the demo, status page on 127.0.0.1:7979) left running for a few
// minutes, then
//
//   node scripts/status_screenshot.mjs http://127.0.0.1:7979/status docs/status-page.png
//
// usage: node scripts/status_screenshot.mjs URL OUT.png [WIDTH] (HPA_TEST_CHROMIUM overrides
// /usr/bin/chromium)
import { chromium } from "playwright-core";
import process from "node:process";

const [url, out, width = "1100"] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node scripts/status_screenshot.mjs URL OUT.png [WIDTH]");
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.HPA_TEST_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
});
try {
  const page = await browser.newPage({ viewport: { width: Number(width), height: 400 } });
  const r = await page.goto(url);
  if (!r || r.status() !== 200) throw new Error(`GET ${url}: ${r?.status()}`);
  await page.screenshot({ path: out, fullPage: true });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
}
