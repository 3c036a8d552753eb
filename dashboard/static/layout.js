// Below SIDEBAR_COLLAPSE_BELOW px the sidebar starts closed, once per page load, so the page gets the
// whole width (Streamlit only does this below 768 px); the reader can still open it with its arrow.
(function () {
  var SIDEBAR_COLLAPSE_BELOW = 1000;
  if (window.innerWidth >= SIDEBAR_COLLAPSE_BELOW) return;
  var done = false;
  var tries = 0;
  var timer = setInterval(function () {
    tries += 1;
    var bar = document.querySelector('[data-testid=stSidebar]');
    var button = document.querySelector('[data-testid=stSidebarCollapseButton] button');
    if (!done && bar && button && bar.getAttribute('data-collapsed') === 'false') {
      button.click();
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
