// pow.js: the proof of work the waiting room asks of a new place, and booking of a guest session on a busy network
// (the open ALTCHA protocol), solved in a Web Worker (pow-worker.js, beside this module) so the page stays
// responsive while it hashes.

const workerURL = new URL("./pow-worker.js", import.meta.url);
let solver = null;
let solving = null; // the reject of the solve in progress

function worker() {
  if (!solver && window.Worker) {
    try { solver = new Worker(workerURL); } catch { solver = null; }
  }
  return solver;
}

// warm starts the worker ahead of need, so its script loads beside the page's other requests.
export function warm() {
  worker();
}

// solve finds the number of challenge ch and resolves to the proof a request carries: base64 of ALTCHA's payload.
// A newer challenge replaces one still being solved (whose promise rejects with "superseded"); a browser that
// cannot run the worker rejects with "unsupported".
export function solve(ch) {
  if (solving) {
    solving(new Error("superseded"));
    solving = null;
    if (solver) { solver.terminate(); solver = null; }
  }
  return new Promise((resolve, reject) => {
    const w = worker();
    if (!w) { reject(new Error("unsupported")); return; }
    solving = reject;
    const t0 = performance.now();
    w.onmessage = (e) => {
      solving = null;
      // How long the fan waited on the solver, for real-user monitoring and the benchmark (which reads this name).
      try { performance.measure("queue-solve", { start: t0, end: performance.now() }); } catch { /* old browser */ }
      const d = e.data || {};
      if (d.error || typeof d.number !== "number") { reject(new Error(d.error || "no solution")); return; }
      resolve(btoa(JSON.stringify({ algorithm: ch.algorithm, challenge: ch.challenge, number: d.number,
        salt: ch.salt, signature: ch.signature, took: d.took })));
    };
    w.onerror = (e) => {
      solving = null;
      if (e && e.preventDefault) e.preventDefault();
      if (solver) { solver.terminate(); solver = null; }
      reject(new Error("unsupported"));
    };
    w.postMessage({ algorithm: ch.algorithm, challenge: ch.challenge, maxnumber: ch.maxnumber, salt: ch.salt });
  });
}
