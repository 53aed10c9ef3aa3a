// Validate a GLB (or .gltf) file with the Khronos glTF validator (npm package gltf-validator)
// and print its JSON report on stdout. Usage: node tests/tools/validate_gltf.mjs FILE
// External resources (a .gltf's .bin, textures) are read from the file's folder.
import { readFile } from "node:fs/promises";
import path from "node:path";
import validator from "gltf-validator";

const file = process.argv[2];
if (!file) {
  console.error("usage: validate_gltf.mjs FILE");
  process.exit(2);
}
const data = new Uint8Array(await readFile(file));
const report = await validator.validateBytes(data, {
  uri: path.basename(file),
  maxIssues: 0, // every issue
  externalResourceFunction: async (uri) =>
    new Uint8Array(await readFile(path.join(path.dirname(file), decodeURIComponent(uri)))),
});
process.stdout.write(JSON.stringify(report));
