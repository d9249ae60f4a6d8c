// `lemma serve` on the real stories260K model driven by the official clients of more APIs: the
// `openai` client's Responses API (text and streamed events, instructions, previous_response_id,
// store: false) and embeddings (batches, token arrays, base64), and the `@anthropic-ai/sdk` client's
// Messages API (system, streaming events, stop_sequences, x-api-key, errors). Greedy answers are
// checked against the same conversation sent to /v1/chat/completions: one engine, one template, so
// the same tokens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './lemma_server.mjs';

const MODEL = 'stories260K';
const KEY = 'e2e-secret';
let server;
let openai;
let anthropic;

before(async () => {
  server = await startServer(['--max-num-seqs', '8', '--max-model-len', '256', '--api-key', KEY, '--response-store-size', '4']);
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 120000 });
  anthropic = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0, timeout: 120000 });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'SIGTERM must drain and exit 0');
});

async function chatText(messages, maxTokens) {
  const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: maxTokens, temperature: 0 });
  return r.choices[0].message.content;
}

test('responses: text input, instructions; streamed events equal the whole response', async () => {
  const params = { model: MODEL, input: 'Once upon a time', instructions: 'Tell a story.', max_output_tokens: 20, temperature: 0 };
  const whole = await openai.responses.create(params);
  assert.equal(whole.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(whole.status));
  assert.ok(whole.output_text.length > 0);
  assert.equal(whole.output[0].content[0].text, whole.output_text);
  assert.ok(whole.usage.input_tokens > 0 && whole.usage.output_tokens > 0 && whole.usage.output_tokens <= 20);
  assert.equal(whole.output_text, await chatText([{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'Once upon a time' }], 20));

  const stream = await openai.responses.create({ ...params, stream: true });
  const types = [];
  let text = '';
  let last;
  let seq = 0;
  for await (const event of stream) {
    assert.equal(event.sequence_number, seq++);
    if (types.at(-1) !== event.type) types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    last = event;
  }
  const end = whole.status === 'completed' ? 'response.completed' : 'response.incomplete';
  assert.deepEqual(types, ['response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added', 'response.output_text.delta', 'response.output_text.done',
    'response.content_part.done', 'response.output_item.done', end]);
  assert.equal(text, whole.output_text);
  assert.equal(last.response.output[0].content[0].text, whole.output_text);
});

test('responses: message items and previous_response_id continue the conversation', async () => {
  const first = await openai.responses.create({
    model: MODEL, input: [{ role: 'user', content: [{ type: 'input_text', text: 'The little dog' }] }], max_output_tokens: 12, temperature: 0,
  });
  const second = await openai.responses.create({
    model: MODEL, input: 'What happened next?', previous_response_id: first.id, max_output_tokens: 12, temperature: 0,
  });
  assert.equal(second.previous_response_id, first.id);
  assert.equal(second.output_text, await chatText([
    { role: 'user', content: 'The little dog' }, { role: 'assistant', content: first.output_text },
    { role: 'user', content: 'What happened next?' }], 12));
});

test('responses: store false keeps nothing; an unknown previous_response_id is a 400 naming it', async () => {
  const unstored = await openai.responses.create({ model: MODEL, input: 'Lily', store: false, max_output_tokens: 4 });
  assert.equal(unstored.store, false);
  await assert.rejects(
    openai.responses.create({ model: MODEL, input: 'more', previous_response_id: unstored.id }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'previous_response_id');
});

test('messages: system and text blocks; the answer equals the chat completion', async () => {
  const msg = await anthropic.messages.create({
    model: MODEL, max_tokens: 16, temperature: 0, system: [{ type: 'text', text: 'Tell a story.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'One day, a big' }] }],
  });
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content[0].type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(msg.stop_reason));
  assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0 && msg.usage.output_tokens <= 16);
  assert.equal(msg.content[0].text, await chatText([{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'One day, a big' }], 16));
});

test('messages: streamed events, then stop_sequences end the turn at the sequence', async () => {
  const params = { model: MODEL, max_tokens: 40, temperature: 0, messages: [{ role: 'user', content: 'Once upon a time' }] };
  const whole = await anthropic.messages.create(params);
  const stream = await anthropic.messages.create({ ...params, stream: true });
  const types = [];
  let text = '';
  let stopReason;
  for await (const event of stream) {
    if (types.at(-1) !== event.type) types.push(event.type);
    if (event.type === 'content_block_delta') text += event.delta.text;
    if (event.type === 'message_delta') stopReason = event.delta.stop_reason;
  }
  // (The SDK drops `ping` events; the unit test sees it on the wire.)
  assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop',
    'message_delta', 'message_stop']);
  assert.equal(text, whole.content[0].text);
  assert.equal(stopReason, whole.stop_reason);

  // A word from the middle of the greedy answer as the stop sequence.
  const words = whole.content[0].text.split(' ').filter((w) => w.length >= 3);
  assert.ok(words.length >= 2, whole.content[0].text);
  const stop = words[1];
  const cut = await anthropic.messages.create({ ...params, stop_sequences: ['@@never@@', stop] });
  assert.equal(cut.stop_reason, 'stop_sequence');
  assert.equal(cut.stop_sequence, stop);
  assert.equal(cut.content[0].text, whole.content[0].text.slice(0, whole.content[0].text.indexOf(stop)));
});

test('messages: x-api-key is checked; errors come in Anthropic\'s shape', async () => {
  const wrong = new Anthropic({ baseURL: server.url, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error.type === 'error' && e.error.error.type === 'authentication_error');
  await assert.rejects(anthropic.messages.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.error.error.type === 'invalid_request_error' &&
      e.error.error.message.includes('max_tokens'));
  // The server keeps serving.
  const ok = await anthropic.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] });
  assert.equal(ok.type, 'message');
});

test('embeddings: strings and token arrays, a batch equals one at a time, base64 equals float', async () => {
  const texts = ['Once upon a time', 'The little dog ran', 'Lily'];
  const batch = await openai.embeddings.create({ model: MODEL, input: texts, encoding_format: 'float' });
  assert.equal(batch.data.length, 3);
  assert.ok(batch.usage.prompt_tokens > 0);
  for (let i = 0; i < texts.length; ++i) {
    const v = batch.data[i].embedding;
    assert.equal(batch.data[i].index, i);
    assert.ok(v.length > 0);
    assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5, 'L2-normalised');
    const alone = await openai.embeddings.create({ model: MODEL, input: texts[i], encoding_format: 'float' });
    assert.deepEqual(alone.data[0].embedding, v);
  }
  assert.notDeepEqual(batch.data[0].embedding, batch.data[1].embedding);
  // The client's default asks for base64 and decodes it to the same floats.
  const decoded = await openai.embeddings.create({ model: MODEL, input: texts[0] });
  assert.deepEqual(decoded.data[0].embedding, batch.data[0].embedding);
  const ids = (await (await fetch(`${server.url}/tokenize`, {
    method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: texts[1] }),
  })).json()).tokens;
  const byIds = await openai.embeddings.create({ model: MODEL, input: [ids], encoding_format: 'float' });
  assert.deepEqual(byIds.data[0].embedding, batch.data[1].embedding);
  await assert.rejects(openai.embeddings.create({ model: MODEL, input: ['ok', ''] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input[1]');
});
