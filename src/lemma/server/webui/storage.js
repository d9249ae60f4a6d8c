// What the page keeps in localStorage, so a reload keeps it: the settings, the conversation, and
// the API key (entered once; sent as a Bearer token).

const STATE_KEY = 'lemma.chat.state';
const API_KEY = 'lemma.chat.apiKey';

export const defaultSettings = { model: '', system: '', temperature: 0.7, maxTokens: 256 };

// { settings, messages: [{ role, content, stats?, stopped? }] }
export function loadState() {
  try {
    const saved = JSON.parse(localStorage.getItem(STATE_KEY) ?? 'null');
    if (saved && Array.isArray(saved.messages)) {
      return { settings: { ...defaultSettings, ...saved.settings }, messages: saved.messages };
    }
  } catch {
    // A damaged entry starts a fresh conversation.
  }
  return { settings: { ...defaultSettings }, messages: [] };
}

export function saveState(state) {
  localStorage.setItem(STATE_KEY, JSON.stringify(state));
}

export function loadApiKey() {
  return localStorage.getItem(API_KEY) ?? '';
}

export function saveApiKey(key) {
  if (key) localStorage.setItem(API_KEY, key);
  else localStorage.removeItem(API_KEY);
}
