// Why: every page builds its DOM through these helpers, never innerHTML, so text from the API
// always shows as text and never runs (and no inline style can slip in past the CSP).

let idSeq = 0;
export const uid = (prefix) => `${prefix}-${++idSeq}`;

/** Builds an element: attrs are attributes (on* are listeners), children are nodes or text. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'style') throw new Error('no inline styles: use a class');
    if (name === 'class') el.className = value;
    else if (name === 'testid') el.dataset.testid = value;
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (['value', 'checked', 'disabled', 'hidden', 'selected'].includes(name)) el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** Builds an SVG element (presentation attributes only, never style). */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'style') throw new Error('no inline styles: use a class');
    el.setAttribute(name === 'testid' ? 'data-testid' : name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child !== undefined && child !== null && child !== false) el.append(child);
  }
}

/** Replaces an element's children (arrays flattened, null and false dropped). */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled control, with an optional hint it is described by. */
export function field(label, control, hint) {
  if (!control.id) control.id = uid('f');
  let hintEl = null;
  if (hint) {
    hintEl = h('span', { class: 'hint', id: `${control.id}-hint` }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

/** A button with why it is disabled next to it, when it is. */
export function guarded(button, reason) {
  if (!reason) return button;
  button.disabled = true;
  const why = h('span', { class: 'reason', id: uid('why') }, reason);
  button.setAttribute('aria-describedby', why.id);
  return h('span', { class: 'guarded' }, button, why);
}

export const $ = (id) => document.getElementById(id);
