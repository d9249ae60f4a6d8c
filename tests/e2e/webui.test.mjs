// The built-in web chat (`lemma serve`'s GET /) in headless Chromium (Debian's `chromium` driven by
// puppeteer-core), against the real server on stories260K with --api-key: the page is public while
// the API refuses a missing or wrong key (and the page shows it); a typed prompt streams an answer
// equal to the API's own greedy answer, with TTFT and tokens/s; a long answer is stopped and the
// server cancels it; a reload keeps the conversation; model output that holds HTML is shown as text.
// Screenshots and the figures (page load, first-token latency) go to LEMMA_WEBUI_OUT.
// CHROMIUM: the browser binary (default /usr/bin/chromium).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { startServer, metric, metricsText, waitForMetrics } from './lemma_server.mjs';

const MODEL = 'stories260K';
const KEY = 'webui-test-key';
const outDir = process.env.LEMMA_WEBUI_OUT ?? fs.mkdtempSync(path.join(os.tmpdir(), 'lemma-webui-'));
let server;
let browser;
let page;
const figures = {};

async function shot(name) {
  await page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });
}

const text = (selector) => page.$eval(selector, (e) => e.textContent);
const messages = () =>
  page.$$eval('#messages .message', (nodes) => nodes.map((n) => ({
    role: n.classList.contains('user') ? 'user' : 'assistant',
    content: n.querySelector('.content').textContent,
    stopped: n.classList.contains('stopped'),
    stats: n.querySelector('.stats') ? { ...n.querySelector('.stats').dataset } : null,
  })));

async function setField(id, value) {
  await page.$eval(`#${id}`, (e, v) => {
    e.value = v;
    e.dispatchEvent(new Event('change'));
  }, String(value));
}

// Types a prompt and presses Enter (the page clears the box as it sends).
async function sendPrompt(prompt) {
  await page.type('#prompt', prompt);
  await page.keyboard.press('Enter');
}

// Resolves once the last answer has ended (finished or stopped: it then shows its figures).
const answered = () => page.waitForFunction(() =>
  document.body.dataset.streaming === 'false' &&
  document.querySelector('#messages .message.assistant:last-child .stats') !== null, { timeout: 120000 });

before(async () => {
  fs.mkdirSync(outDir, { recursive: true });
  server = await startServer(['--api-key', KEY]);  // max_model_len 2048
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 800 });
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
});

after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal(await server.stop(), 0, 'SIGTERM must drain and exit 0');
  fs.writeFileSync(path.join(outDir, 'figures.json'), JSON.stringify(figures, null, 2));
  console.log(`web chat figures: ${JSON.stringify(figures)}; screenshots in ${outDir}`);
});

test('the page is public with --api-key and says the API refused a missing key', async () => {
  const response = await page.goto(`${server.url}/`, { waitUntil: 'load' });
  assert.equal(response.status(), 200);
  assert.match(response.headers()['content-type'], /^text\/html/);
  assert.ok(response.headers().etag);
  const nav = await page.evaluate(() => performance.getEntriesByType('navigation')[0].toJSON());
  figures.page_load_ms = Number(nav.loadEventEnd.toFixed(1));
  figures.dom_content_loaded_ms = Number(nav.domContentLoadedEventEnd.toFixed(1));
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await text('#error'), /401/);
  await shot('01-no-key');
  // The API itself still needs the key.
  assert.equal((await fetch(`${server.url}/v1/models`)).status, 401);
});

test('a wrong key: the refused request is shown as an error and the prompt kept', async () => {
  await setField('api-key', 'wrong-key');
  await page.waitForFunction(() => /401/.test(document.getElementById('error').textContent));
  await sendPrompt('Once upon a time');
  // Refused: the prompt comes back to the box, to send again.
  await page.waitForFunction(() => document.getElementById('prompt').value === 'Once upon a time');
  assert.equal(await page.$eval('body', (e) => e.dataset.streaming), 'false');
  assert.match(await text('#error'), /^401: invalid or missing API key.*enter the server's API key/);
  assert.deepEqual(await messages(), [], 'a refused prompt leaves no message');
  await shot('02-wrong-key');
  await page.$eval('#prompt', (e) => { e.value = ''; });
});

test('with the key: the model picker lists the served model', async () => {
  await setField('api-key', KEY);
  await page.waitForFunction((m) => [...document.querySelectorAll('#model option')].some((o) => o.value === m), {}, MODEL);
  assert.equal(await page.$eval('#error', (e) => e.hidden), true);
  assert.equal(await page.$eval('#model', (e) => e.value), MODEL);
});

test('a typed prompt streams the answer the API gives, with TTFT and tokens/s', async () => {
  await setField('temperature', 0);
  await setField('max-tokens', 40);
  await setField('system', 'You tell short stories.');
  const requests = [];
  const onRequest = (r) => { if (r.url().endsWith('/v1/chat/completions')) requests.push(r); };
  page.on('request', onRequest);
  await sendPrompt('Once upon a time');
  await answered();
  page.off('request', onRequest);
  const shown = await messages();
  assert.equal(shown.length, 2);
  assert.deepEqual(shown[0], { role: 'user', content: 'Once upon a time', stopped: false, stats: null });
  // The request streamed (SSE) and carried the key.
  assert.equal(requests.length, 1);
  const sent = JSON.parse(requests[0].postData());
  assert.equal(sent.stream, true);
  assert.equal(sent.model, MODEL);
  assert.equal(sent.temperature, 0);
  assert.equal(sent.max_tokens, 40);
  assert.deepEqual(sent.messages, [{ role: 'system', content: 'You tell short stories.' },
    { role: 'user', content: 'Once upon a time' }]);
  assert.equal(requests[0].headers().authorization, `Bearer ${KEY}`);
  assert.match(requests[0].response().headers()['content-type'], /^text\/event-stream/);
  // The same request answered whole by the API: the streamed pieces put together equal it.
  const whole = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: MODEL, messages: sent.messages, temperature: 0, max_tokens: 40 }),
  }).then((r) => r.json());
  const expected = whole.choices[0].message.content;
  assert.ok(expected.length > 0);
  const kept = await page.evaluate(() => JSON.parse(localStorage.getItem('lemma.chat.state')).messages);
  assert.equal(kept[1].content, expected, 'the streamed pieces put together');
  assert.equal(shown[1].content.replace(/\s+/g, ''), expected.replace(/\s+/g, ''), 'and shown');
  const stats = shown[1].stats;
  assert.equal(Number(stats.tokens), whole.usage.completion_tokens);
  assert.ok(Number(stats.ttftMs) > 0, 'TTFT shown');
  assert.ok(Number(stats.tokensPerSecond) > 0, 'tokens/s shown');
  figures.first_token_ms = Number(stats.ttftMs);
  figures.tokens_per_second = Number(stats.tokensPerSecond);
  await shot('03-answer');
});

test('a reload keeps the conversation and the settings', async () => {
  const before = await messages();
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction((m) => document.getElementById('model').value === m, {}, MODEL);
  assert.deepEqual(await messages(), before);
  assert.equal(await page.$eval('#max-tokens', (e) => e.value), '40');
  assert.equal(await page.$eval('#system', (e) => e.value), 'You tell short stories.');
  assert.equal(await page.$eval('#api-key', (e) => e.value), KEY);
  await shot('04-reloaded');
});

test('the stop button ends a long answer and the server cancels it', async () => {
  const cancelled = () => metricsText(server.url).then((t) => metric(t, 'lemma_requests_finished_total{reason="cancelled"}'));
  const cancelledBefore = await cancelled();
  await page.click('#new-chat');
  await setField('max-tokens', 1900);  // greedy, this prompt runs to the limit: ~0.7 s here
  // stories260K writes ~2700 tokens/s here, so a click sent from node could come late:
  // the page clicks Stop itself the moment the first words are shown.
  const clicked = page.evaluate(() => new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      const last = document.querySelector('#messages .message.assistant:last-child .content');
      if (!last || last.textContent.length === 0) return;
      observer.disconnect();
      document.getElementById('stop').click();
      resolve(last.textContent.length);
    });
    observer.observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
  }));
  await sendPrompt('Tell me a very long story');
  assert.ok((await clicked) > 0);
  await answered();
  const shown = await messages();
  assert.equal(shown.length, 2);
  assert.equal(shown[1].stopped, true, 'the answer is marked stopped');
  assert.ok(shown[1].content.length > 0, 'what came before the stop is kept');
  assert.ok(Number(shown[1].stats.tokens) < 1900);
  figures.stopped_after_tokens = Number(shown[1].stats.tokens);
  assert.equal(await page.$eval('#stop', (e) => e.hidden), true);
  assert.equal(await page.$eval('#send', (e) => e.disabled), false);
  const m = await waitForMetrics(server.url, (t) =>
    metric(t, 'lemma_requests_finished_total{reason="cancelled"}') > cancelledBefore &&
    metric(t, 'lemma_requests_running') === 0);
  assert.equal(metric(m, 'lemma_requests_finished_total{reason="cancelled"}'), cancelledBefore + 1,
    'the server cancelled the request when the page stopped reading');
  assert.equal(metric(m, 'lemma_kv_blocks_used'), 0);
  await shot('05-stopped');
});

test('model output holding HTML or markdown is shown as text, never as markup', async () => {
  const injection = '<img src=x onerror="window.__injected=1"> and <script>window.__injected=2</script>';
  const answer = `Here:\n\n${injection}\n\n**bold** and \`<b>code</b>\`\n\n\`\`\`html\n<img src=y onerror="window.__injected=3">\n\`\`\`\n- one\n- two`;
  // A conversation whose stored answer (what the model said) holds the markup, as a reload shows it.
  await page.evaluate((a) => {
    const state = JSON.parse(localStorage.getItem('lemma.chat.state'));
    state.messages = [{ role: 'user', content: '<i>user</i> text' }, { role: 'assistant', content: a }];
    localStorage.setItem('lemma.chat.state', JSON.stringify(state));
  }, answer);
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('#messages .message.assistant');
  const content = '#messages .message.assistant .content';
  assert.equal(await page.$$eval(`#messages img, #messages script, #messages i, #messages b`, (n) => n.length), 0);
  assert.equal(await page.evaluate(() => window.__injected), undefined);
  assert.ok((await text(content)).includes(injection), 'the markup is shown as its text');
  assert.ok((await text('#messages .message.user .content')).includes('<i>user</i> text'));
  assert.equal(await page.$eval(`${content} strong`, (e) => e.textContent), 'bold');
  assert.equal(await page.$eval(`${content} p code`, (e) => e.textContent), '<b>code</b>');
  assert.equal(await page.$eval(`${content} pre code`, (e) => e.textContent), '<img src=y onerror="window.__injected=3">');
  assert.equal(await page.$eval(`${content} pre code`, (e) => e.dataset.lang), 'html');
  assert.deepEqual(await page.$$eval(`${content} ul li`, (n) => n.map((e) => e.textContent)), ['one', 'two']);
  await shot('06-injection-as-text');
});
