// Parses Mermaid diagrams with Mermaid's own parser (mermaid.parse, in jsdom's DOM): reads a JSON
// array of diagram sources on stdin, prints one JSON line per diagram, {"ok": true, "type": ...}
// or {"ok": false, "error": ...}. The packages come from the directory SINEW_TEST_MERMAID names
// (`npm ci` of this directory's package.json and lock file; `cargo xtask ci` installs it).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const modules = createRequire(path.join(path.resolve(process.env.SINEW_TEST_MERMAID), 'package.json'));
const load = async (name) => import(pathToFileURL(modules.resolve(name)).href);
const { JSDOM } = await load('jsdom');
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await load('mermaid');
mermaid.initialize({ startOnLoad: false });

let input = '';
for await (const chunk of process.stdin) input += chunk;
for (const source of JSON.parse(input)) {
  try {
    const parsed = await mermaid.parse(source);
    console.log(JSON.stringify({ ok: true, type: parsed.diagramType }));
  } catch (error) {
    console.log(JSON.stringify({ ok: false, error: String(error?.message ?? error) }));
  }
}
