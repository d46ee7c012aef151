// dom.js: building markup from script, never from HTML strings: text from data stays text, so nothing a fan or
// an operator typed can become markup.

// $ is the element with the given id.
export const $ = (id) => document.getElementById(id);

// el builds an element: attrs are properties (a function such as onclick, a boolean such as disabled) or
// attributes ("text" is its text), children are nodes or strings (as text).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k in e && typeof v !== "string") e[k] = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}
