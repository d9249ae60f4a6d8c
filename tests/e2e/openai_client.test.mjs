// `lemma serve` on the real stories260K model, driven by the official `openai` npm client the way
// users drive it: completions and chat, streaming and not; 32 concurrent greedy requests equal to
// the same requests one by one (and /metrics shows batched steps); parallel choices; prefix-cache
// hits; a storm of 200 requests with seeded client disconnects that leaves every KV block free;
// bad requests answered with 4xx while other clients keep being served; API keys; SIGTERM drain;
// structured output under concurrency; a tool call round trip.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, metric, metricsText, waitForMetrics, rng, sharedDir } from './lemma_server.mjs';

const MODEL = 'stories260K';
let server;
let client;

before(async () => {
  server = await startServer(['--max-num-seqs', '32', '--max-request-bytes', '65536', '--max-model-len', '256']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'SIGTERM must drain and exit 0');
});

const prompts = Array.from({ length: 32 }, (_, i) =>
  ['Once upon a time', 'The little dog', 'Lily and Tom went', 'One day, a big', 'The sun was'][i % 5] + ` ${i}`);

test('models lists the served model', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL]);
});

test('completions: streaming text equals the non-streaming text', async () => {
  const params = { model: MODEL, prompt: 'Once upon a time', max_tokens: 24, temperature: 0 };
  const whole = await client.completions.create(params);
  assert.equal(whole.object, 'text_completion');
  assert.ok(whole.choices[0].text.length > 0);
  assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.prompt_tokens > 0);
  assert.ok(whole.usage.completion_tokens > 0 && whole.usage.completion_tokens <= 24);

  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage;
  let finish;
  for await (const chunk of stream) {
    if (chunk.choices.length > 0) {
      text += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage.completion_tokens, whole.usage.completion_tokens);
});

test('chat: streaming and non-streaming agree; logprobs are reported', async () => {
  const params = {
    model: MODEL,
    messages: [{ role: 'user', content: 'Tell me a story about a cat.' }],
    max_completion_tokens: 20,
    temperature: 0,
    logprobs: true,
    top_logprobs: 2,
  };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.choices[0].message.role, 'assistant');
  const content = whole.choices[0].message.content;
  assert.ok(content.length > 0);
  const lp = whole.choices[0].logprobs.content;
  assert.ok(lp.length > 0);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
    assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
  }
  const stream = await client.chat.completions.create({ ...params, logprobs: false, top_logprobs: undefined, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, content);
});

test('32 concurrent greedy requests return what they return one by one, in batched steps', async () => {
  const one = (prompt) =>
    client.completions.create({ model: MODEL, prompt, max_tokens: 128, temperature: 0 }).then((r) => r.choices[0].text);
  const sequential = [];
  for (const p of prompts) sequential.push(await one(p));
  const before = await metricsText(server.url);
  const concurrent = await Promise.all(prompts.map(one));
  assert.deepEqual(concurrent, sequential);
  const after = await metricsText(server.url);
  const single = metric(after, 'lemma_batch_size_bucket{le="1"}') - metric(before, 'lemma_batch_size_bucket{le="1"}');
  const steps = metric(after, 'lemma_batch_size_count') - metric(before, 'lemma_batch_size_count');
  assert.ok(steps - single > 0, `expected steps with more than one sequence (steps ${steps}, single ${single})`);
  assert.ok(metric(after, 'lemma_batch_size_sum') - metric(before, 'lemma_batch_size_sum') > steps,
    'mean batch size must exceed 1');
});

test('parallel choices (n) with a seed are reproducible and differ from each other', async () => {
  const params = { model: MODEL, prompt: 'The little dog', max_tokens: 16, temperature: 1.0, n: 3, seed: 42 };
  const a = await client.completions.create(params);
  const b = await client.completions.create(params);
  assert.equal(a.choices.length, 3);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
  assert.deepEqual(a.choices.map((c) => c.index).sort(), [0, 1, 2]);
  assert.ok(new Set(a.choices.map((c) => c.text)).size > 1, 'choices with different seeds should differ');
  const single = await client.completions.create({ ...params, n: 1 });
  assert.equal(single.choices[0].text, a.choices.find((c) => c.index === 0).text, 'choice 0 is the n=1 run');
});

test('a repeated prefix hits the prefix cache and gives identical output', async () => {
  const prefix = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. '.repeat(2);
  const params = { model: MODEL, prompt: prefix + 'One day', max_tokens: 16, temperature: 0 };
  const first = await client.completions.create(params);
  const second = await client.completions.create(params);
  assert.equal(second.choices[0].text, first.choices[0].text);
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(second.usage));
  assert.ok(second.usage.prompt_tokens_details.cached_tokens < second.usage.prompt_tokens);
  const m = await metricsText(server.url);
  assert.ok(metric(m, 'lemma_prefix_cache_hits_total') > 0);
});

test('bad requests get clear 4xx errors while another client keeps streaming', async () => {
  const streaming = client.completions
    .create({ model: MODEL, prompt: 'The sun was', max_tokens: 120, temperature: 0, stream: true, ignore_eos: true,
      stream_options: { include_usage: true } })
    .then(async (s) => {
      let usage;
      for await (const c of s) if (c.usage) usage = c.usage;
      return usage.completion_tokens;
    });
  const post = (body, headers = { 'content-type': 'application/json' }) =>
    fetch(`${server.url}/v1/completions`, { method: 'POST', body, headers });
  const expectError = async (resPromise, status, what) => {
    const res = await resPromise;
    assert.equal(res.status, status, what);
    const j = await res.json();
    assert.equal(typeof j.error.message, 'string', what);
    assert.ok(j.error.message.length > 0, what);
  };
  await expectError(post('{"model": "stories260K", "prompt": '), 400, 'malformed JSON');
  await expectError(post(JSON.stringify({ model: MODEL, prompt: 'x', max_tokens: 'ten' })), 400, 'wrong type');
  await expectError(post(JSON.stringify({ model: MODEL, prompt: 'x', temperature: -1 })), 400, 'out of range');
  await expectError(post(JSON.stringify({ model: MODEL, prompt: 'x'.repeat(70000) })), 413, 'body too large');
  const invalidUtf8 = Buffer.concat([Buffer.from('{"model":"stories260K","prompt":"a'), Buffer.from([0xc3, 0x28]),
    Buffer.from('"}')]);
  await expectError(post(invalidUtf8), 400, 'invalid UTF-8');
  await expectError(post(JSON.stringify({ model: MODEL, prompt: 'word '.repeat(400), max_tokens: 4 })), 400,
    'prompt longer than the context');
  await expectError(post(JSON.stringify({ model: 'no-such-model', prompt: 'x' })), 404, 'unknown model');
  await expectError(fetch(`${server.url}/v1/nothing`), 404, 'unknown route');
  assert.equal(await streaming, 120, 'the streaming client got every token');
});

test('a storm of 200 requests with seeded disconnects leaves every KV block free', async () => {
  const random = rng(20261202);
  const jobs = [];
  let aborted = 0;
  for (let i = 0; i < 200; i++) {
    const controller = new AbortController();
    const stream = random() < 0.5;
    const params = { model: MODEL, prompt: prompts[i % prompts.length], max_tokens: 8 + Math.floor(random() * 56),
      temperature: random() < 0.5 ? 0 : 0.8, stream };
    const cutAfterMs = random() < 0.6 ? Math.floor(random() * 400) : null;
    if (cutAfterMs !== null) setTimeout(() => controller.abort(), cutAfterMs);
    jobs.push(
      client.completions.create(params, { signal: controller.signal })
        .then(async (r) => {
          if (stream) for await (const _ of r) { /* drain */ }
        })
        .catch((e) => {
          if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== 'AbortError') throw e;
          aborted += 1;
        }),
    );
  }
  await Promise.all(jobs);
  assert.ok(aborted > 0, 'some clients must have disconnected');
  const m = await waitForMetrics(server.url, (t) =>
    metric(t, 'lemma_kv_blocks_used') === 0 && metric(t, 'lemma_requests_running') === 0 &&
    metric(t, 'lemma_requests_waiting') === 0);
  assert.equal(metric(m, 'lemma_kv_blocks_used'), 0, 'every KV block is free after the storm');
  assert.equal(metric(m, 'lemma_requests_running'), 0);
  assert.ok(metric(m, 'lemma_requests_finished_total{reason="cancelled"}') > 0);
  const after = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 4 });
  assert.equal(after.choices.length, 1, 'the server keeps serving');
});

test('/metrics passes promtool check metrics', { skip: !hasPromtool() && !process.env.CI }, () => {
  return metricsText(server.url).then((text) => {
    const file = path.join(os.tmpdir(), `lemma-metrics-${process.pid}.txt`);
    fs.writeFileSync(file, text);
    execFileSync('sh', ['-c', `promtool check metrics < ${file}`], { stdio: 'pipe' });
    for (const name of ['lemma_requests_running', 'lemma_requests_waiting', 'lemma_kv_blocks_total',
      'lemma_prefix_cache_queries_total', 'lemma_preemptions_total', 'lemma_prompt_tokens_total',
      'lemma_generation_tokens_total', 'lemma_time_to_first_token_seconds_count',
      'lemma_time_per_output_token_seconds_count', 'lemma_inter_token_latency_seconds_count',
      'lemma_e2e_request_latency_seconds_count', 'lemma_queue_time_seconds_count'])
      assert.ok(text.includes(`\n${name}`), `${name} missing`);
  });
});

test('--api-key: 401 without the key, 200 with it', async () => {
  const keyed = await startServer(['--api-key', 'sekret', '--served-model-name', 'tiny']);
  try {
    const bad = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e.status === 401);
    const good = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
    const r = await good.completions.create({ model: 'tiny', prompt: 'Hi', max_tokens: 3 });
    assert.equal(r.model, 'tiny');
  } finally {
    assert.equal(await keyed.stop(), 0);
  }
});

function hasPromtool() {
  try {
    execFileSync('sh', ['-c', 'command -v promtool'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

test('structured output: 32 concurrent json_schema requests parse and validate; a bad schema is a 400 while others stream', async () => {
  const schema = {
    type: 'object',
    properties: { mood: { enum: ['good', 'bad'] }, count: { type: 'integer', minimum: 1, maximum: 9 } },
    required: ['mood', 'count'],
    additionalProperties: false,
  };
  const constrained = prompts.map((p, i) =>
    client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: p }],
      max_tokens: 160,
      temperature: 0.8,
      seed: i,
      response_format: { type: 'json_schema', json_schema: { name: 'mood', schema, strict: true } },
    }));
  const bad = client.chat.completions
    .create({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { not: { type: 'null' } } } },
    })
    .then(() => assert.fail('a schema with "not" must be refused'), (e) => e);
  const stream = client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 16, stream: true,
  });
  const err = await bad;
  assert.equal(err.status, 400);
  assert.match(err.message, /not/);
  let streamed = '';
  for await (const chunk of await stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  assert.ok(streamed.length > 0);
  for (const r of await Promise.all(constrained)) {
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'stop', `completed: ${c.message.content}`);
    const value = JSON.parse(c.message.content);
    assert.deepEqual(Object.keys(value), ['mood', 'count']);
    assert.ok(['good', 'bad'].includes(value.mood));
    assert.ok(Number.isInteger(value.count) && value.count >= 1 && value.count <= 9);
  }
});

// A tool call round trip on a model with a tool template (Qwen2.5's Hermes format): the named
// tool_choice makes even stories260K call the tool with arguments of its schema; the tool's answer
// goes back as a `tool` message and the model answers in text; the streamed call equals the whole one.
test('tools: call -> tool message -> answer round-trips through the openai client', async () => {
  const template = path.join(sharedDir, 'data/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja');
  const toolServer = await startServer(['--chat-template', template, '--max-model-len', '1024']);
  try {
    const tools = [{
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather in a city',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } },
          required: ['city', 'unit'],
          additionalProperties: false,
        },
      },
    }];
    const tc = new OpenAI({ baseURL: `${toolServer.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const params = {
      model: MODEL, messages, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_tokens: 120, temperature: 0,
    };
    const first = await tc.chat.completions.create(params);
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual(Object.keys(args).sort(), ['city', 'unit']);
    assert.ok(typeof args.city === 'string' && args.city.length <= 12);
    assert.ok(['c', 'f'].includes(args.unit));

    // Streamed as OpenAI streams calls: a first delta with index, id, type and name (arguments ""),
    // then the arguments piece by piece as the model writes them, adding up byte for byte to the
    // non-streamed arguments.
    const deltas = [];
    let finish;
    for await (const chunk of await tc.chat.completions.create({ ...params, stream: true })) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) deltas.push(d);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    // How many pieces depends on timing (jump-forward confirms several forced tokens per step, and
    // a slow reader gets steps coalesced); piece by piece is tested byte-exactly in
    // tests/unit/server/tool_call_stream_test.cpp. Here: the opening delta, then the arguments.
    assert.ok(deltas.length >= 2, `an opening delta, then the arguments (${deltas.length} deltas)`);
    assert.equal(deltas[0].index, 0);
    assert.equal(deltas[0].type, 'function');
    assert.ok(deltas[0].id.startsWith('call_'));
    assert.equal(deltas[0].function.name, 'get_weather');
    assert.equal(deltas[0].function.arguments, '');
    for (const d of deltas.slice(1)) {
      assert.equal(d.index, 0);
      assert.equal(d.id, undefined);
      assert.equal(d.function.name, undefined);
    }
    assert.equal(deltas.map((d) => d.function.arguments).join(''), call.function.arguments);
    assert.equal(finish, 'tool_calls');
    // The SDK's own stream helper assembles the same call from the deltas.
    const assembled = await tc.beta.chat.completions.stream({ ...params, stream: true }).finalChatCompletion();
    assert.equal(assembled.choices[0].finish_reason, 'tool_calls');
    assert.equal(assembled.choices[0].message.tool_calls.length, 1);
    assert.equal(assembled.choices[0].message.tool_calls[0].function.name, 'get_weather');
    assert.equal(assembled.choices[0].message.tool_calls[0].function.arguments, call.function.arguments);

    // tool_choice auto: free text until the model opens a call (a lazy grammar); streamed and whole agree.
    const auto = { model: MODEL, messages, tools, tool_choice: 'auto', max_tokens: 48, temperature: 0 };
    const whole = (await tc.chat.completions.create(auto)).choices[0];
    const streamedAuto = (await tc.beta.chat.completions.stream({ ...auto, stream: true }).finalChatCompletion()).choices[0];
    assert.equal(streamedAuto.finish_reason, whole.finish_reason);
    assert.equal(streamedAuto.message.content ?? '', whole.message.content ?? '');
    assert.deepEqual((streamedAuto.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]),
      (whole.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]));

    // The tool's result goes back; the model answers (text, no call: tool_choice none).
    const answer = await tc.chat.completions.create({
      model: MODEL,
      messages: [...messages, choice.message, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' }],
      tools, tool_choice: 'none', max_tokens: 24, temperature: 0,
    });
    assert.ok(['stop', 'length'].includes(answer.choices[0].finish_reason));
    assert.ok(answer.choices[0].message.content.length > 0);
    assert.ok(!answer.choices[0].message.tool_calls || answer.choices[0].message.tool_calls.length === 0);
    assert.ok(answer.usage.prompt_tokens > first.usage.prompt_tokens);  // the call and its result are in the prompt
  } finally {
    assert.equal(await toolServer.stop(), 0);
  }
});
