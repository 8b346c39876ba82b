// Opens working_memory's views in headless Chromium and writes what a person would see:
//
//   node views.js foxglove '{"base": ..., "bag": ..., "layout": ..., "time": ..., "out": ...,
//                            "ready": ...}'
//   node views.js report '{"url": ..., "out": ...}'
//
// `foxglove` opens the bag (a URL) and the layout (a file) in Foxglove Studio served at
// `base` (tools/browser/foxglove/index.html), at RFC 3339 `time`, and waits until the page
// shows the text `ready` (optional); `report` opens an HTML report. Both print one JSON object
// on stdout (what was seen, the page's errors and the screenshots written to `out`); the
// checks are the caller's.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

// Without these the headless browser reaches for network services the machine cannot reach.
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const LOAD_TIMEOUT_MS = 90000;
const SETTLE_MS = 3000;  // after the network is idle, for the panels' last frame

async function openBrowser(seen) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wm-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true, args: [...FLAGS, `--user-data-dir=${profile}`],
  });
  const page = await browser.newPage();
  page.on('pageerror', (error) => seen.errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') {
      seen.console.push(message.text());
    }
  });
  page.on('response', (response) => {
    if (response.status() >= 400) {
      seen.errors.push(`HTTP ${response.status()} ${response.url()}`);
    }
  });
  page.on('requestfailed', (request) => {
    // The app cancels the reads of the bag it no longer needs: that is no error.
    if (request.failure()?.errorText !== 'net::ERR_ABORTED') {
      seen.errors.push(`request failed: ${request.url()} ${request.failure()?.errorText}`);
    }
  });
  return { browser, page, profile };
}

const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function idle(page) {
  await page.waitForNetworkIdle({ idleTime: 1000, timeout: LOAD_TIMEOUT_MS });
  await settle(SETTLE_MS);
}

async function shot(element, out, name) {
  const file = path.join(out, name);
  await element.screenshot({ path: file });
  return file;
}

// A layout as the app's layout storage holds it (boot.js), selected in the user's profile.
function seedLayout(layout) {
  const row = {
    namespace: 'local',
    layout: {
      id: 'working_memory', name: 'working_memory', permission: 'CREATOR_WRITE',
      baseline: { data: layout, savedAt: new Date().toISOString() },
    },
  };
  localStorage.setItem('working_memory.layouts', JSON.stringify([row]));
  localStorage.setItem('studio.profile-data', JSON.stringify({ currentLayoutId: 'working_memory' }));
}

async function foxglove(args, seen, page) {
  const layout = JSON.parse(fs.readFileSync(args.layout, 'utf8'));
  await page.setViewport({ width: 1600, height: 900 });
  await page.evaluateOnNewDocument(seedLayout, layout);
  const client = await page.createCDPSession();
  await client.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: args.out });
  const query = new URLSearchParams({ ds: 'remote-file', 'ds.url': args.bag, time: args.time });
  await page.goto(`${args.base}/boot/index.html?${query}`, { timeout: LOAD_TIMEOUT_MS });
  // The bag is open (the sidebar shows its end), and the panels show `ready` (a text of the
  // chosen time, when the caller knows one).
  for (const text of ['END TIME', args.ready].filter(Boolean)) {
    await page.waitForFunction((t) => document.body.innerText.includes(t),
      { timeout: LOAD_TIMEOUT_MS }, text);
  }
  await idle(page);

  // The sidebar's Problems tab: its label (with a count when there are any) and its list.
  const problemsTab = await page.waitForSelector('[role="tab"]::-p-text(Problems)');
  await problemsTab.click();
  await settle(500);
  seen.problems = await problemsTab.evaluate((tab) => ({
    tab: tab.innerText,
    list: tab.closest('.MuiTabs-root').parentElement.lastElementChild.innerText,
  }));

  await page.keyboard.down('Control');  // Ctrl+B closes the sidebar: the panels get the room
  await page.keyboard.press('b');
  await page.keyboard.up('Control');
  for (const tip of await page.$$('[role="tooltip"] button')) {
    await tip.click();
  }
  await idle(page);
  seen.screenshots.app = path.join(args.out, 'foxglove_app.png');
  await page.screenshot({ path: seen.screenshots.app });
  seen.panels = {};
  for (const id of Object.keys(layout.configById)) {
    const panel = await page.$(`[data-testid="panel-mouseenter-container ${id}"]`);
    if (panel === null) {
      seen.errors.push(`panel ${id} of the layout is not on the page`);
      continue;
    }
    const name = `foxglove_${id.replace(/[^A-Za-z0-9]+/g, '_').toLowerCase()}.png`;
    seen.panels[id] = { screenshot: await shot(panel, args.out, name), text: await panel.evaluate((e) => e.innerText) };
    if (id.startsWith('Plot!')) {
      seen.panels[id].csv = await plotData(panel, args.out, id);
    }
  }
}

// The plot's own data, through its "Download plot data as CSV" button.
async function plotData(panel, out, id) {
  const file = path.join(out, 'plot_data.csv');
  fs.rmSync(file, { force: true });
  await panel.hover();
  const button = await panel.waitForSelector('[title="Download plot data as CSV"]');
  await button.click();
  for (let waited = 0; !fs.existsSync(file) && waited < 10000; waited += 100) {
    await settle(100);
  }
  if (!fs.existsSync(file)) {
    return undefined;
  }
  const kept = path.join(out, `${id.replace(/[^A-Za-z0-9]+/g, '_').toLowerCase()}.csv`);
  fs.renameSync(file, kept);
  return kept;
}

async function report(args, seen, page) {
  await page.setViewport({ width: 1200, height: 900 });
  await page.goto(args.url, { waitUntil: 'load', timeout: LOAD_TIMEOUT_MS });
  seen.images = await page.$$eval('img', (images) => images.map((image) => ({
    id: image.id, complete: image.complete, width: image.naturalWidth, height: image.naturalHeight,
  })));
  seen.outcome = await page.$eval('#outcome', (box) => ({
    text: box.innerText, visible: box.getBoundingClientRect().height > 0,
  })).catch(() => undefined);
  seen.screenshots.report = path.join(args.out, 'report.png');
  await page.screenshot({ path: seen.screenshots.report, fullPage: true });
}

async function main() {
  const [command, json] = process.argv.slice(2);
  const views = { foxglove, report };
  if (!(command in views) || json === undefined) {
    console.error('usage: node views.js foxglove|report JSON');
    process.exit(2);
  }
  const args = JSON.parse(json);
  const seen = { errors: [], console: [], screenshots: {} };
  const { browser, page, profile } = await openBrowser(seen);
  try {
    await views[command](args, seen, page);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(seen) + '\n');
}

main().catch((error) => {
  console.error(error.stack || String(error));
  process.exit(1);
});
