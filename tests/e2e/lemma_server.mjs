// Starts `lemma serve` on a free port for the end-to-end tests and stops it with SIGTERM.
// LEMMA_BIN: the lemma binary; LEMMA_SHARED: the shared data folder (default ../shared).
import { spawn } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';

export const sharedDir = process.env.LEMMA_SHARED ?? path.resolve(import.meta.dirname, '../../../shared');
export const storiesModel = path.join(sharedDir, 'data/models/stories260K/stories260K.gguf');

export function requireData() {
  if (!fs.existsSync(storiesModel)) throw new Error(`missing shared test data: ${storiesModel}`);
  if (!process.env.LEMMA_BIN) throw new Error('LEMMA_BIN must name the lemma binary');
}

// Resolves with { url, port, proc, stderr(), stop() } once the server says where it listens.
export function startServer(extraArgs = []) {
  requireData();
  const args = ['serve', '--model', storiesModel, '--port', '0', '--threads', '1', ...extraArgs];
  const proc = spawn(process.env.LEMMA_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 30000);
    proc.on('exit', (code) => reject(new Error(`server exited early (${code}):\n${log}`)));
    proc.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const m = log.match(/listening on http:\/\/([\d.]+):(\d+)/);
      if (m && timer) {
        clearTimeout(timer);
        const port = Number(m[2]);
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          proc,
          stderr: () => log,
          // SIGTERM, then the exit code (the drain must end with 0).
          stop: () =>
            new Promise((res) => {
              if (proc.exitCode !== null) return res(proc.exitCode);
              proc.removeAllListeners('exit');
              proc.on('exit', (code, signal) => res(code ?? signal));
              proc.kill('SIGTERM');
            }),
        });
      }
    });
  });
}

// One sample value from the Prometheus text, e.g. metric(text, 'lemma_kv_blocks_used').
export function metric(text, sample) {
  const line = text.split('\n').find((l) => l.startsWith(sample + ' '));
  if (line === undefined) throw new Error(`metric ${sample} missing`);
  return Number(line.slice(sample.length + 1));
}

export async function metricsText(url) {
  const r = await fetch(`${url}/metrics`);
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  return r.text();
}

// Polls until pred(metrics text) holds or `ms` pass; returns the last text.
export async function waitForMetrics(url, pred, ms = 30000) {
  const until = Date.now() + ms;
  let text = '';
  while (Date.now() < until) {
    text = await metricsText(url);
    if (pred(text)) return text;
    await new Promise((r) => setTimeout(r, 50));
  }
  return text;
}

// Seeded PRNG (mulberry32) so the storm's disconnect moments are reproducible.
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
