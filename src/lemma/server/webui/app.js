// lemma's web chat: wires the page (index.html) to the server's API (chat_api.js), keeps the
// conversation and settings across reloads (storage.js) and shows answers as they stream, rendered
// safely (markdown.js) with their TTFT and tokens/s (answer_clock.js).
import { AnswerClock, formatStats } from './answer_clock.js';
import { ApiError, listModels, streamChat } from './chat_api.js';
import { renderMarkdown } from './markdown.js';
import { loadApiKey, loadState, saveApiKey, saveState } from './storage.js';

const $ = (id) => document.getElementById(id);
const state = loadState();
let controller = null;  // the answer being streamed, if any

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = !message;
}

function describe(error) {
  if (error instanceof ApiError && error.status === 401) {
    return `${error.message} - enter the server's API key in the settings`;
  }
  return error.message;
}

function messageNode(message) {
  const node = document.createElement('div');
  node.className = `message ${message.role}${message.stopped ? ' stopped' : ''}`;
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = message.role === 'user' ? 'You' : 'Assistant';
  const content = document.createElement('div');
  content.className = 'content';
  if (message.role === 'user') content.textContent = message.content;
  else content.append(renderMarkdown(message.content));
  node.append(role, content);
  if (message.stats) {
    const stats = document.createElement('div');
    stats.className = 'stats';
    stats.textContent = formatStats(message.stats);
    stats.dataset.tokens = message.stats.tokens;
    if (message.stats.ttftMs !== null) stats.dataset.ttftMs = message.stats.ttftMs.toFixed(1);
    if (message.stats.tokensPerSecond !== null) stats.dataset.tokensPerSecond = message.stats.tokensPerSecond.toFixed(1);
    node.append(stats);
  }
  return node;
}

function render() {
  $('messages').replaceChildren(...state.messages.map(messageNode));
  $('messages').scrollTop = $('messages').scrollHeight;
}

// Re-renders the last message only, at most once a frame while tokens stream in.
let pendingFrame = 0;
function renderLast() {
  if (pendingFrame) return;
  pendingFrame = requestAnimationFrame(() => {
    pendingFrame = 0;
    const list = $('messages');
    if (list.lastChild) list.lastChild.replaceWith(messageNode(state.messages.at(-1)));
    list.scrollTop = list.scrollHeight;
  });
}

function setStreaming(on) {
  $('send').disabled = on;
  $('stop').hidden = !on;
  document.body.dataset.streaming = on ? 'true' : 'false';
}

function readSettings() {
  const s = state.settings;
  s.model = $('model').value;
  s.system = $('system').value;
  s.temperature = Number($('temperature').value);
  s.maxTokens = Number.parseInt($('max-tokens').value, 10);
  saveState(state);
}

async function loadModels() {
  try {
    const ids = await listModels(loadApiKey());
    $('model').replaceChildren(...ids.map((id) => Object.assign(document.createElement('option'), { value: id, textContent: id })));
    if (ids.includes(state.settings.model)) $('model').value = state.settings.model;
    state.settings.model = $('model').value;
    showError('');
  } catch (error) {
    showError(`Could not list the models: ${describe(error)}`);
  }
}

async function send(prompt) {
  readSettings();
  const s = state.settings;
  const history = state.messages.map(({ role, content }) => ({ role, content }));
  const messages = [...(s.system.trim() ? [{ role: 'system', content: s.system }] : []), ...history,
    { role: 'user', content: prompt }];
  state.messages.push({ role: 'user', content: prompt }, { role: 'assistant', content: '' });
  const answer = state.messages.at(-1);
  render();
  showError('');
  setStreaming(true);
  controller = new AbortController();
  const clock = new AnswerClock();
  const number = (x) => (Number.isFinite(x) ? x : undefined);  // an empty field: the server's default
  const request = { model: s.model || undefined, messages, temperature: number(s.temperature), max_tokens: number(s.maxTokens) };
  try {
    const { usage } = await streamChat(request, loadApiKey(), controller.signal, (piece) => {
      clock.piece();
      answer.content += piece;
      renderLast();
    });
    answer.stats = clock.finish(usage?.completion_tokens);
  } catch (error) {
    if (error.name === 'AbortError') {
      answer.stopped = true;
      answer.stats = clock.finish();
    } else {
      state.messages.splice(-2, 2);  // the prompt goes back in the box to send again
      $('prompt').value = prompt;
      showError(describe(error));
    }
  } finally {
    controller = null;
    setStreaming(false);
    saveState(state);
    render();
  }
}

function init() {
  const s = state.settings;
  $('system').value = s.system;
  $('temperature').value = s.temperature;
  $('max-tokens').value = s.maxTokens;
  $('api-key').value = loadApiKey();
  for (const id of ['model', 'system', 'temperature', 'max-tokens']) $(id).addEventListener('change', readSettings);
  $('api-key').addEventListener('change', () => {
    saveApiKey($('api-key').value.trim());
    loadModels();
  });
  $('settings').addEventListener('submit', (event) => event.preventDefault());  // Enter in a field
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const prompt = $('prompt').value;
    if (!prompt.trim() || controller) return;
    $('prompt').value = '';
    send(prompt);
  });
  $('prompt').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => controller?.abort());
  $('new-chat').addEventListener('click', () => {
    controller?.abort();
    state.messages = [];
    saveState(state);
    render();
  });
  setStreaming(false);
  render();
  loadModels();
}

init();
