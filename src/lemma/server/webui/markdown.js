// Renders a model's markdown as DOM nodes built with createElement and textContent, never
// innerHTML, so HTML in the output (`<img src=x onerror=...>`) is shown as text. Blocks: fenced
// code (an unclosed fence, mid-stream, is still code), headings, lists, block quotes, paragraphs;
// inline: `code`, **bold**, *italic*. Links stay text.

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const LIST_ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
const QUOTE = /^\s*>\s?(.*)$/;
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)/;

function element(doc, tag, text) {
  const node = doc.createElement(tag);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Inline spans of one line into `parent`.
function appendInline(doc, parent, text) {
  let rest = text;
  for (let m = INLINE.exec(rest); m; m = INLINE.exec(rest)) {
    if (m.index > 0) parent.append(doc.createTextNode(rest.slice(0, m.index)));
    if (m[2] !== undefined) parent.append(element(doc, 'code', m[2]));
    else if (m[3] !== undefined || m[4] !== undefined) parent.append(element(doc, 'strong', m[3] ?? m[4]));
    else parent.append(element(doc, 'em', m[5] ?? m[6]));
    rest = rest.slice(m.index + m[0].length);
  }
  if (rest) parent.append(doc.createTextNode(rest));
}

// Lines into `parent`, separated by line breaks.
function appendLines(doc, parent, lines) {
  lines.forEach((line, i) => {
    if (i > 0) parent.append(element(doc, 'br'));
    appendInline(doc, parent, line);
  });
}

function codeBlock(doc, lang, lines) {
  const pre = element(doc, 'pre');
  if (lang) pre.append(Object.assign(element(doc, 'span', lang), { className: 'lang' }));
  const code = element(doc, 'code', lines.join('\n'));
  if (lang) code.dataset.lang = lang;
  pre.append(code);
  return pre;
}

export function renderMarkdown(text, doc = document) {
  const out = doc.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) appendLines(doc, out.appendChild(element(doc, 'p')), paragraph);
    paragraph = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const body = [];
      const close = new RegExp(`^\\s*${fence[1][0]}{${fence[1].length},}\\s*$`);
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      out.append(codeBlock(doc, fence[2], body));
      continue;
    }
    const heading = HEADING.exec(line);
    const item = LIST_ITEM.exec(line);
    const quote = QUOTE.exec(line);
    if (heading) {
      flush();
      appendInline(doc, out.appendChild(element(doc, `h${Math.min(heading[1].length + 2, 6)}`)), heading[2]);
    } else if (item) {
      if (paragraph.length) flush();
      const tag = /\d/.test(item[1]) ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== tag) list = out.appendChild(element(doc, tag));
      appendInline(doc, list.appendChild(element(doc, 'li')), item[2]);
    } else if (quote) {
      flush();
      appendInline(doc, out.appendChild(element(doc, 'blockquote')), quote[1]);
    } else if (line.trim() === '') {
      flush();
    } else {
      list = null;
      paragraph.push(line);
    }
  }
  flush();
  return out;
}
