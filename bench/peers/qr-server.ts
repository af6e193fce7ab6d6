/**
 * The peer of the QR-over-HTTP benchmark, QuickChart's approach: a plain `node:http` server that answers
 * `GET /api/qr-code/generate/{anything}/{url-encoded text}` with npm `qrcode`'s `toBuffer` PNG (512 px, margin
 * 4, level M), and `POST /api/qr-code/generate {value}` with `toDataURL` in JSON, and nothing else: no keys, no limits, no scan check. Run by `bench/qr-http.ts` as its own process
 * through the same launcher as the service (test/helpers/server-process.ts): it listens on PORT, writes a
 * placeholder DATA_DIR/dev-api-key (the path segment is ignored) and logs "listening" as the service does.
 */
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import QRCode from "qrcode";

const PREFIX = "/api/qr-code/generate/";

const server = createServer(async (req, res) => {
  const path = req.url ?? "";
  if (req.method === "POST" && path === "/api/qr-code/generate") return answerDataUrl(req, res);
  const slash = path.startsWith(PREFIX) ? path.indexOf("/", PREFIX.length) : -1;
  if (req.method !== "GET" || slash < 0) {
    res.writeHead(404).end();
    return;
  }
  try {
    const png = await QRCode.toBuffer(decodeURIComponent(path.slice(slash + 1)), { width: 512, margin: 4, errorCorrectionLevel: "M" });
    res.writeHead(200, { "content-type": "image/png", "content-length": png.length }).end(png);
  } catch {
    res.writeHead(400).end();
  }
});

/** POST `{type:"url", value}`: `{data:{qrCodeDataUrl}}` from `toDataURL`, as a JSON API peer answers. */
async function answerDataUrl(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body = "";
  for await (const chunk of req) body += chunk;
  try {
    const { value } = JSON.parse(body) as { value: string };
    const qrCodeDataUrl = await QRCode.toDataURL(value, { width: 512, margin: 4, errorCorrectionLevel: "M" });
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ data: { qrCodeDataUrl } }));
  } catch {
    res.writeHead(400).end();
  }
}

server.listen(Number(process.env.PORT), "127.0.0.1", () => {
  writeFileSync(join(process.env.DATA_DIR!, "dev-api-key"), "peer-ignores-the-key\n");
  console.log(JSON.stringify({ level: "info", message: "listening" }));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
