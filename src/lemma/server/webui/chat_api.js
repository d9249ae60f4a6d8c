// The server's OpenAI API as the page uses it: GET /v1/models, and POST /v1/chat/completions
// streamed as server-sent events. The API key, when set, goes as `Authorization: Bearer`.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(apiKey) {
  const h = { 'Content-Type': 'application/json' };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

async function failure(response) {
  let message = response.statusText || 'request failed';
  try {
    message = (await response.json()).error?.message ?? message;
  } catch {
    // Not an OpenAI error object: keep the status text.
  }
  return new ApiError(response.status, `${response.status}: ${message}`);
}

export async function listModels(apiKey) {
  const response = await fetch('/v1/models', { headers: headers(apiKey) });
  if (!response.ok) throw await failure(response);
  return (await response.json()).data.map((m) => m.id);
}

// One streamed chat completion. Calls onDelta(text) per content piece; resolves with
// { finishReason, usage } at the end. Aborting `signal` closes the connection, and the server
// then cancels the request.
export async function streamChat(request, apiKey, signal, onDelta) {
  const body = JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } });
  const response = await fetch('/v1/chat/completions', { method: 'POST', headers: headers(apiKey), body, signal });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let finishReason = null;
  let usage = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, '\n');
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const data = buffer.slice(0, end).split('\n').filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart()).join('\n');
      buffer = buffer.slice(end + 2);
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new ApiError(500, `error: ${chunk.error.message}`);
      const choice = chunk.choices?.[0];
      if (choice?.delta?.content) onDelta(choice.delta.content);
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
  }
  return { finishReason, usage };
}
