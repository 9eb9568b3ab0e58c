// driver.js -- a real headless Chromium (Debian's /usr/bin/chromium) driven by
// puppeteer-core for the tracy-serve page tests (tests/browser/*.py).
//
// It reads one JSON command a line on stdin and answers each with one JSON
// line on stdout, {"id": N, "value": ...} or {"id": N, "error": "..."}:
//   {"op": "open", "url": U, "ready": EXPR, "timeout": S}  load U, wait for EXPR
//   {"op": "eval", "expr": EXPR}          the value of EXPR (promises awaited)
//   {"op": "wait", "expr": EXPR, "timeout": S}  the value of EXPR once truthy
//   {"op": "mouse", "steps": [...]}       real input events, in order: each
//       step is {"move": [x, y]}, {"down": [x, y]}, {"up": [x, y]},
//       {"wheel": [x, y, dy]}, {"key": NAME} (press), {"keydown": NAME},
//       {"keyup": NAME}, {"pause": MS}
//   {"op": "click", "selector": SEL}      a real click in the element's middle
//   {"op": "type", "selector": SEL, "text": T}  focus SEL, replace its value
//   {"op": "screenshot", "path": P}       a PNG of the viewport
//   {"op": "log"}                         {"errors": [...], "outside": [...], "answers": [...]}
//                                         since the last "log", then cleared
//   {"op": "allow", "prefix": P}          let requests to URLs starting with P
//                                         through too (the benchmark's file:
//                                         pages; the tests never use it)
// Requests: only the origin of the first "open" is let through; any other
// is aborted and listed in "outside". Console errors, uncaught exceptions
// and failed requests are listed in "errors". The browser closes when stdin
// does. The driver never downloads a browser: CHROMIUM (default
// /usr/bin/chromium) must exist.
'use strict';
const readline = require('readline');
const puppeteer = require('puppeteer-core');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const WIDTH = +(process.env.TRACY_BROWSER_WIDTH || 1400);
const HEIGHT = +(process.env.TRACY_BROWSER_HEIGHT || 900);

let browser = null;
let page = null;
let origin = null;
let errors = [];
let answers = []; // error statuses the server answered, with their URLs
let outside = [];
const allowed = [];

async function start() {
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
           '--disable-extensions', '--disable-background-networking', '--enable-precise-memory-info',
           '--window-size=' + WIDTH + ',' + HEIGHT],
    defaultViewport: {width: WIDTH, height: HEIGHT},
  });
  page = await browser.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'assert') errors.push('console.' + m.type() + ': ' + m.text());
  });
  page.on('pageerror', (e) => errors.push('exception: ' + (e && e.message)));
  // which request a console "Failed to load resource" line was about
  page.on('response', (r) => {
    if (r.status() >= 400) answers.push(r.status() + ' ' + r.url());
  });
  page.on('requestfailed', (r) => {
    const why = (r.failure() || {}).errorText;
    // the page's own aborts (a viewport fetch overtaken by a newer one) are no error
    if (why !== 'net::ERR_ABORTED' && !outside.includes(r.url())) errors.push('request failed: ' + r.url() + ' ' + why);
  });
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    const url = r.url();
    if (url === 'about:blank' || (origin && url.startsWith(origin + '/')) || url === origin ||
        allowed.some((p) => url.startsWith(p))) {
      r.continue();
    } else {
      outside.push(url);
      r.abort('blockedbyclient');
    }
  });
}

async function until(expr, timeoutS) {
  const deadline = Date.now() + 1000 * (timeoutS || 30);
  for (;;) {
    const v = await page.evaluate(expr);
    if (v) return v;
    if (Date.now() > deadline) throw new Error('not true after ' + (timeoutS || 30) + ' s: ' + expr);
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function mouse(steps) {
  for (const s of steps) {
    if (s.move) await page.mouse.move(s.move[0], s.move[1], {steps: s.n || 1});
    else if (s.down) { await page.mouse.move(s.down[0], s.down[1]); await page.mouse.down(); }
    else if (s.up) { await page.mouse.move(s.up[0], s.up[1], {steps: s.n || 4}); await page.mouse.up(); }
    else if (s.wheel) { await page.mouse.move(s.wheel[0], s.wheel[1]); await page.mouse.wheel({deltaY: s.wheel[2]}); }
    else if (s.key) await page.keyboard.press(s.key);
    else if (s.keydown) await page.keyboard.down(s.keydown);
    else if (s.keyup) await page.keyboard.up(s.keyup);
    else if (s.pause) await new Promise((res) => setTimeout(res, s.pause));
    else throw new Error('unknown mouse step ' + JSON.stringify(s));
  }
  return true;
}

async function run(cmd) {
  switch (cmd.op) {
  case 'open':
    if (!origin && /^https?:/.test(cmd.url)) origin = new URL(cmd.url).origin;
    await page.goto(cmd.url, {waitUntil: 'load', timeout: 1000 * (cmd.timeout || 30)});
    return cmd.ready ? until(cmd.ready, cmd.timeout) : true;
  case 'eval':
    return page.evaluate(cmd.expr);
  case 'wait':
    return until(cmd.expr, cmd.timeout);
  case 'mouse':
    return mouse(cmd.steps);
  case 'click': {
    const el = await page.waitForSelector(cmd.selector, {timeout: 10000});
    await el.click();
    return true;
  }
  case 'type': {
    const el = await page.waitForSelector(cmd.selector, {timeout: 10000});
    await el.click({count: 3});
    await page.keyboard.press('Backspace');
    await el.type(cmd.text);
    return true;
  }
  case 'screenshot':
    await page.screenshot({path: cmd.path});
    return true;
  case 'allow':
    allowed.push(cmd.prefix);
    return true;
  case 'log': {
    const r = {errors, outside, answers};
    errors = [];
    answers = [];
    outside = [];
    return r;
  }
  default:
    throw new Error('unknown op ' + cmd.op);
  }
}

function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function main() {
  try {
    await start();
  } catch (e) {
    answer({id: 0, error: 'cannot start ' + CHROMIUM + ': ' + e.message});
    process.exit(1);
  }
  answer({id: 0, value: await browser.version()});
  const rl = readline.createInterface({input: process.stdin});
  // one command at a time, in order
  let chain = Promise.resolve();
  rl.on('line', (line) => {
    chain = chain.then(async () => {
      let cmd;
      try {
        cmd = JSON.parse(line);
        answer({id: cmd.id, value: await run(cmd)});
      } catch (e) {
        answer({id: cmd ? cmd.id : -1, error: String(e && e.stack || e)});
      }
    });
  });
  rl.on('close', () => chain.then(() => browser.close()).then(() => process.exit(0)));
}

main();
