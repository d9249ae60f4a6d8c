// The figures shown under each answer: TTFT (from sending the request to the first content piece)
// and tokens/s (the answer's tokens over the time from sending to its end). Not the decode rate
// after the first token: with a fast model the browser reads many tokens at once, and the time
// between the first and the last read says little.

export class AnswerClock {
  constructor(now = () => performance.now()) {
    this.now = now;
    this.start = now();
    this.first = null;
    this.pieces = 0;
  }

  piece() {
    if (this.first === null) this.first = this.now();
    this.pieces += 1;
  }

  // `completionTokens`: the server's usage count; without it (a stopped answer) the pieces seen.
  finish(completionTokens) {
    const end = this.now();
    const tokens = completionTokens ?? this.pieces;
    const stats = { tokens, ttftMs: null, tokensPerSecond: null };
    if (this.first === null) return stats;
    stats.ttftMs = this.first - this.start;
    if (end > this.start) stats.tokensPerSecond = (tokens * 1000) / (end - this.start);
    return stats;
  }
}

export function formatStats(stats) {
  const parts = [`${stats.tokens} tokens`];
  if (stats.ttftMs !== null) parts.push(`TTFT ${stats.ttftMs.toFixed(0)} ms`);
  if (stats.tokensPerSecond !== null) parts.push(`${stats.tokensPerSecond.toFixed(1)} tok/s`);
  return parts.join(' · ');
}
