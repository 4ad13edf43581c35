// Building the page: every text goes in through textContent or a text node, never as HTML.
/* global document, Node */

export const $ = (id) => document.getElementById(id);

/** Appends `children` to `node`: nodes as they are, other values as text; null and undefined are skipped. */
export function appendChildren(node, children) {
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

/**
 * An HTML element: `class` sets the class name, `on<event>` adds a listener, `dataset` fills the data-*
 * attributes, any other prop is an attribute.
 */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  return appendChildren(node, children);
}

/** Fills `list` with one `<li>` per item from `render`, or with `<li class="empty">` saying `emptyText`. */
export function fillList(list, items, emptyText, render) {
  if (items.length === 0) list.replaceChildren(el('li', { class: 'empty' }, emptyText));
  else list.replaceChildren(...items.map(render));
}

/** A row of the products' or contexts' list: the name in bold, a grey line about it, then its buttons. */
export function itemRow(dataset, name, meta, ...buttons) {
  return el(
    'li',
    { dataset },
    el('span', {}, el('strong', {}, name), ' ', el('span', { class: 'meta' }, meta)),
    el('span', { class: 'row' }, ...buttons),
  );
}

/** A small button; `kind` is `secondary` or `danger`. */
export function smallButton(label, kind, onclick) {
  return el('button', { type: 'button', class: `${kind} small`, onclick }, label);
}
