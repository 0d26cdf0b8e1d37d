// tollgate's proof-of-work solver. It finds a nonce such that
// SHA-256(token || nonce as 8 bytes big-endian) starts with `difficulty`
// zero bits, with Web Crypto only: no third-party code, no cookies, no
// network but the form's own post. Web Crypto exists only in a secure
// context (HTTPS, or http://localhost).
(function () {
  "use strict";

  // Digests in flight at once: Web Crypto answers each in a promise, and
  // a batch keeps the browser's hashing threads busy between turns.
  var BATCH = 256;

  function hasZeroBits(h, bits) {
    var i = 0;
    for (; bits >= 8; bits -= 8, i++) {
      if (h[i] !== 0) return false;
    }
    return bits === 0 || (h[i] >> (8 - bits)) === 0;
  }

  // solve resolves to the nonce as a decimal string.
  async function solve(token, difficulty, onProgress) {
    if (!(window.crypto && crypto.subtle)) {
      throw new Error("Web Crypto is not available: this page needs HTTPS");
    }
    difficulty = Number(difficulty);
    if (!(difficulty >= 1 && difficulty <= 32)) throw new Error("bad difficulty");
    var prefix = new TextEncoder().encode(token);
    var bufs = [];
    for (var j = 0; j < BATCH; j++) {
      var b = new Uint8Array(prefix.length + 8);
      b.set(prefix);
      bufs.push(b);
    }
    var tries = [];
    for (var base = 0; base < Number.MAX_SAFE_INTEGER; base += BATCH) {
      for (var k = 0; k < BATCH; k++) {
        var n = base + k;
        var v = new DataView(bufs[k].buffer);
        v.setUint32(prefix.length, Math.floor(n / 4294967296));
        v.setUint32(prefix.length + 4, n >>> 0);
        tries[k] = crypto.subtle.digest("SHA-256", bufs[k]);
      }
      var hashes = await Promise.all(tries);
      for (var m = 0; m < BATCH; m++) {
        if (hasZeroBits(new Uint8Array(hashes[m]), difficulty)) return String(base + m);
      }
      if (onProgress) onProgress(base + BATCH);
    }
    throw new Error("no nonce found");
  }
  window.tollgateSolve = solve;

  function say(text) {
    var el = document.getElementById("tollgate-status");
    if (el) el.textContent = text;
  }

  // A provider widget calls this (data-callback) with its response.
  window.tollgateProviderDone = function (response) {
    var form = document.querySelector("form[data-tollgate-challenge]");
    if (!form) return;
    form.elements.tollgate_response.value = response;
    say("Done. Continuing…");
    form.submit();
  };

  async function run() {
    var form = document.querySelector("form[data-tollgate-challenge]");
    if (!form || form.getAttribute("data-kind") !== "pow") return;
    var started = Date.now();
    try {
      var nonce = await solve(form.getAttribute("data-token"), form.getAttribute("data-difficulty"));
      form.elements.tollgate_nonce.value = nonce;
      form.setAttribute("data-solve-ms", String(Date.now() - started));
      say("Done. Continuing…");
      form.submit();
    } catch (e) {
      form.setAttribute("data-error", String(e && e.message));
      say("This check could not run here: " + (e && e.message));
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", run);
  } else {
    run();
  }
})();
