// The widget manager (html-manager 1.x) calls MathJax 2's MathJax.Hub.Queue(["Typeset", hub, el]);
// the book loads MathJax 3.  Map that call onto MathJax 3 (see book/_ext/bookfixes.py).
(function () {
  if (!window.MathJax || window.MathJax.Hub) return;
  window.MathJax.Hub = {
    Queue: function (cmd) {
      var el = Array.isArray(cmd) ? cmd[2] : undefined;
      var mj = window.MathJax;
      var run = function () { return mj.typesetPromise ? mj.typesetPromise(el ? [el] : undefined) : null; };
      var ready = mj.startup && mj.startup.promise;
      (ready ? ready.then(run) : Promise.resolve(run())).catch(function () {});
    },
  };
})();
