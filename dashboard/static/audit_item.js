export default function (component) {
  // One audit item: the question, the answer with the statement marked, and (pair items) the source
  // with its best-matching passage marked and scrolled into view. Every text arrives as data and is
  // inserted with textContent only; a URL becomes a link only when it parses as http(s).
  const { data, parentElement } = component;
  const host = parentElement;
  const old = host.querySelector('.aud');
  if (old) { old.remove(); }
  if (!data) { return; }
  // The label button clicked for the last item keeps the keyboard focus, and its ring would sit on
  // the same answer of this item like a preset choice (anchoring): a new item starts unfocused.
  const focused = document.activeElement;
  if (focused && focused.closest && focused.closest('[class*="st-key-audit_btn_"]')) { focused.blur(); }

  const el = (tag, cls, text) => {
    const n = document.createElement(tag);
    if (cls) { n.className = cls; }
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    return n;
  };
  const marked = (box, text, start, end, markLabel) => {
    const s = Number.isInteger(start) ? start : -1;
    const e = Number.isInteger(end) ? end : -1;
    const t = String(text || '');
    if (s < 0 || e <= s || e > t.length) { box.appendChild(document.createTextNode(t)); return null; }
    box.appendChild(document.createTextNode(t.slice(0, s)));
    const m = el('mark', 'aud-mark', t.slice(s, e));
    m.setAttribute('aria-label', markLabel);
    box.appendChild(m);
    box.appendChild(document.createTextNode(t.slice(e)));
    return m;
  };
  const safeUrl = (u) => {
    try { const p = new URL(String(u || '')); return (p.protocol === 'http:' || p.protocol === 'https:') ? p.href : null; }
    catch (err) { return null; }
  };
  const scrollTo = (box, mark) => {
    if (!box || !mark) { return; }
    requestAnimationFrame(() => { box.scrollTop = Math.max(0, mark.offsetTop - 28); });
  };

  const root = el('div', 'aud');
  root.setAttribute('data-testid', 'audit-item');
  const q = el('div', 'aud-q');
  q.appendChild(el('span', 'aud-lbl', 'Question'));
  q.appendChild(el('span', 'aud-qtext', data.query || ''));
  root.appendChild(q);

  const stmt = el('div', 'aud-stmt');
  stmt.appendChild(el('span', 'aud-lbl', data.unit === 'pair' ? 'Statement to check' : 'Statement to label'));
  stmt.appendChild(el('span', 'aud-stext', data.statement || ''));
  root.appendChild(stmt);

  const cols = el('div', data.unit === 'pair' ? 'aud-cols' : 'aud-cols aud-one');
  const left = el('div', 'aud-col');
  left.appendChild(el('div', 'aud-lbl', 'The answer it comes from (the statement is highlighted)'));
  const abox = el('div', 'aud-box');
  abox.setAttribute('data-testid', 'audit-answer');
  const amark = marked(abox, data.answer_text, data.statement_start, data.statement_end, 'the statement');
  if (!amark) { left.appendChild(el('div', 'aud-note', '(the statement could not be located in the answer text)')); }
  left.appendChild(abox);
  cols.appendChild(left);

  let sbox = null;
  let smark = null;
  if (data.unit === 'pair') {
    const right = el('div', 'aud-col');
    const head = el('div', 'aud-lbl');
    head.textContent = 'Source [' + String(data.source_index) + ']' + (data.cited ? '' : ' (not cited by this statement)');
    right.appendChild(head);
    const title = el('div', 'aud-title', data.source_title || '(no title)');
    right.appendChild(title);
    const href = safeUrl(data.source_url);
    if (href) {
      const a = el('a', 'aud-url', data.source_url);
      a.href = href; a.target = '_blank'; a.rel = 'noopener noreferrer nofollow';
      right.appendChild(a);
    } else if (data.source_url) {
      right.appendChild(el('div', 'aud-url', String(data.source_url) + ' (not a web address: not linked)'));
    }
    sbox = el('div', 'aud-box aud-src');
    sbox.setAttribute('data-testid', 'audit-source');
    if (String(data.source_text || '').trim()) {
      smark = marked(sbox, data.source_text, data.passage_start, data.passage_end, 'best-matching passage');
      right.appendChild(el('div', 'aud-note', smark
        ? 'The passage sharing the most words with the statement is highlighted; read around it too.'
        : 'A short source: read all of it.'));
    } else {
      sbox.appendChild(el('div', 'aud-note', 'No text of this source is stored. Open the link to read it, or answer "can\'t tell".'));
    }
    right.appendChild(sbox);
    cols.appendChild(right);
  }
  root.appendChild(cols);
  host.appendChild(root);
  scrollTo(abox, amark);
  scrollTo(sbox, smark);
}
