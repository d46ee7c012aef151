// scanner.js: the door's camera. It reads QR codes from the camera's frames with the browser's BarcodeDetector
// where there is one (Chrome on Android and macOS), else with jsQR (vendor/jsQR.js, loaded on first use) on the
// frames drawn to a canvas, a few times a second, and hands each text it reads to onCode.

const EVERY_MS = 120; // between two looks at the camera
const MAX_SIDE = 720; // frames are scaled down to this for jsQR: enough for a phone's code at arm's length

export class Scanner {
  constructor(video, canvas, onCode) {
    Object.assign(this, { video, canvas, onCode });
    this.running = false;
  }

  // start opens the back camera and starts reading; it rejects when there is no camera or it was refused.
  async start() {
    if (this.running) return;
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) throw new Error("This browser has no camera access.");
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: false,
      video: { facingMode: { ideal: "environment" }, width: { ideal: 1280 }, height: { ideal: 720 } } });
    this.video.srcObject = this.stream;
    await this.video.play();
    this.read = await reader(this.canvas);
    this.running = true;
    this.loop();
  }

  stop() {
    this.running = false;
    clearTimeout(this.timer);
    if (this.stream) for (const t of this.stream.getTracks()) t.stop();
    this.stream = null;
    this.video.srcObject = null;
  }

  async loop() {
    if (!this.running) return;
    try {
      if (this.video.readyState >= 2) {
        const text = await this.read(this.video);
        if (text && this.running) this.onCode(text);
      }
    } catch { /* a frame that could not be read: the next one will do */ }
    if (this.running) this.timer = setTimeout(() => this.loop(), EVERY_MS);
  }
}

// reader picks how frames are read: a function from the video to the text of a code in view, or "".
async function reader(canvas) {
  if ("BarcodeDetector" in self) {
    try {
      const formats = await self.BarcodeDetector.getSupportedFormats();
      if (formats.includes("qr_code")) {
        const d = new self.BarcodeDetector({ formats: ["qr_code"] });
        return async (video) => {
          const found = await d.detect(video);
          return found.length ? found[0].rawValue : "";
        };
      }
    } catch { /* fall back to jsQR */ }
  }
  await import("./jsQR.js"); // UMD: sets self.jsQR
  const jsQR = self.jsQR;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  return async (video) => {
    const w0 = video.videoWidth, h0 = video.videoHeight;
    if (!w0 || !h0) return "";
    const k = Math.min(1, MAX_SIDE / Math.max(w0, h0));
    const w = Math.round(w0 * k), h = Math.round(h0 * k);
    if (canvas.width !== w) canvas.width = w;
    if (canvas.height !== h) canvas.height = h;
    ctx.drawImage(video, 0, 0, w, h);
    const img = ctx.getImageData(0, 0, w, h);
    const r = jsQR(img.data, w, h, { inversionAttempts: "dontInvert" });
    return r ? r.data : "";
  };
}
