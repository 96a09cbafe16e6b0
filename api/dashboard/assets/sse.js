// A Server-Sent Events reader over fetch(): EventSource cannot send an
// Authorization header, and the token must not go in the URL (it would land
// in logs and history). It parses the stream as the HTML standard's event
// stream format says: fields up to a blank line, "event" and "data"
// ("data" lines joined with a newline), lines starting with ":" ignored.

import { base, headers, ApiError } from "./api.js";

// stream reads GET /events until signal aborts or the stream fails. It
// calls onOpen once the response is 200, onEvent(type, data) per event;
// it resolves when the stream ends and rejects with an ApiError on a
// refusal or a broken connection.
export async function stream(signal, onOpen, onEvent) {
  let resp;
  try {
    resp = await fetch(base + "/events", { headers: headers(), cache: "no-store", signal });
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
  let buf = "";
  let type = "", data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (data.length) dispatch(onEvent, type || "message", data.join("\n"));
        type = ""; data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") type = val;
      else if (field === "data") data.push(val);
    }
  }
}

function dispatch(onEvent, type, raw) {
  let msg;
  try { msg = JSON.parse(raw); } catch { return; }
  onEvent(type, msg);
}
