// Below SIDEBAR_COLLAPSE_BELOW px the sidebar starts closed, once per page load, so the page gets the
// whole width (Streamlit itself does this below 768 px, so there is nothing to do there); the reader
// can still open it with its arrow. The watch ends at the first sight of the sidebar, and at the
// reader's first click or key: it closes the sidebar Streamlit opened, never one a person opened.
(function () {
  var SIDEBAR_COLLAPSE_BELOW = 1000;
  var STREAMLIT_COLLAPSES_BELOW = 768;
  if (window.innerWidth >= SIDEBAR_COLLAPSE_BELOW || window.innerWidth < STREAMLIT_COLLAPSES_BELOW) return;
  var done = false;
  var tries = 0;
  var stop = function () { done = true; };
  document.addEventListener('pointerdown', stop, { capture: true, once: true });
  document.addEventListener('keydown', stop, { capture: true, once: true });
  var timer = setInterval(function () {
    tries += 1;
    var bar = document.querySelector('[data-testid=stSidebar]');
    var button = document.querySelector('[data-testid=stSidebarCollapseButton] button');
    if (!done && bar && button) {
      if (bar.getAttribute('data-collapsed') === 'false') button.click();
      done = true;
    }
    if (done || tries > 200) clearInterval(timer);
  }, 50);
})();

// A page writing its own state into the address (?dataset=...&judge=...) replaces the history entry
// instead of adding one per control, so Back after following a link (a tour step) returns in one
// press. Moving to another page still adds an entry.
(function () {
  var push = window.history.pushState.bind(window.history);
  window.history.pushState = function (state, title, url) {
    try {
      if (url != null && new URL(String(url), window.location.href).pathname === window.location.pathname) {
        return window.history.replaceState(state, title, url);
      }
    } catch (e) { /* an unusual address: leave it to the browser */ }
    return push(state, title, url);
  };
})();
