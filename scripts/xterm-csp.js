// jean2 (scripts/vendor-xterm): xterm.js's <style> elements as the Content-Security-Policy
// allows them. The element it gets is inert (hidden, and not a <style>); the text it writes
// there goes to a constructed style sheet of the document, adopted while the element has
// not been removed.
function __jean2StyleElement(doc) {
  const el = doc.createElement("jean2-xterm-style");
  el.hidden = true;
  const sheet = new doc.defaultView.CSSStyleSheet();
  let text = "";
  doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
  Object.defineProperty(el, "textContent", {
    get: () => text,
    set: (v) => { text = String(v); sheet.replaceSync(text); },
  });
  const remove = el.remove.bind(el);
  el.remove = () => {
    remove();
    doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet);
  };
  return el;
}
