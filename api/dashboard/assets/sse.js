// A Server-Sent Events reader over fetch(): EventSource cannot send an
// Authorization header, and the token must not go in the URL (it would land
// in logs and history). It parses the stream as the HTML standard's event
// stream format says: fields up to a blank line, "event" and "data"
// ("data" lines joined with a newline), lines starting with ":" ignored.

import { base, headers, ApiError } from "./api.js";

// stream reads GET /events until signal aborts or the stream fails. It
// calls onOpen once the response is 200, onEvent(type, data) per event;
// it resolves when the stream ends and rejects with an ApiError on a
// refusal or a broken connection. With lastId (an event's id), the stream
// starts with the remembered events published after that one.
export async function stream(signal, lastId, onOpen, onEvent) {
  let resp;
  const h = headers();
  if (lastId) h["Last-Event-ID"] = lastId;
  try {
    resp = await fetch(base + "/events", { headers: h, cache: "no-store", signal });
  } catch (e) {
    throw new ApiError(0, "event stream: " + e.message);
  }
  if (!resp.ok) {
    let msg = resp.statusText;
    try { msg = (await resp.json()).error || msg; } catch { /* keep the status text */ }
    throw new ApiError(resp.status, `${resp.status}: ${msg}`);
  }
  onOpen();
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new Parser();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    for (const [type, data] of parser.push(value)) {
      let msg;
      try { msg = JSON.parse(data); } catch { continue; }
      onEvent(type, msg);
    }
  }
}

// Parser turns chunks of an event stream, cut anywhere, into [type, data]
// pairs: fields up to a blank line, "event" and "data" ("data" lines
// joined with a newline), lines starting with ":" ignored, a line ending
// in CRLF, LF or CR.
export class Parser {
  constructor() {
    this.buf = "";
    this.type = "";
    this.data = [];
  }

  push(chunk) {
    this.buf += chunk;
    const out = [];
    let nl;
    while ((nl = this.buf.search(/\r\n|\r|\n/)) >= 0) {
      // A CR at the very end may be the first half of a CRLF: wait.
      if (this.buf[nl] === "\r" && nl === this.buf.length - 1) break;
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + (this.buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (this.data.length) out.push([this.type || "message", this.data.join("\n")]);
        this.type = "";
        this.data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") this.type = val;
      else if (field === "data") this.data.push(val);
    }
    return out;
  }
}
