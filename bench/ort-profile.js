// Runs ort-run.js with onnxruntime's profiler on and writes, per node, the median of its kernel
// times over the runs (warm-ups included: the median leaves them out) as JSON.
//
// Usage: NODE_PATH=... node bench/ort-profile.js OUT.json ORT-RUN.js MODEL [ort-run.js options]
// OUT.json: [{"node": NAME, "op": OP_TYPE, "us": MEDIAN, "runs": COUNT}, ...] in onnxruntime's
// node names (after its graph optimizations: a fused node is named by its first node, or by the
// output it ends in with an "_nchwc" suffix for its blocked-layout kernels).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const [out, runner] = process.argv.slice(2, 4);
if (!out || !runner) {
  console.error('usage: ort-profile.js OUT.json ORT-RUN.js MODEL [ort-run.js options]');
  process.exit(2);
}
let ort;
try { ort = require('onnxruntime-node'); } catch (e) {
  console.error('ort-profile: onnxruntime-node not found (set NODE_PATH; tools/setup.sh installs it)');
  process.exit(2);
}
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnxr-ort-profile-'));
const sessions = [];
const create = ort.InferenceSession.create;
ort.InferenceSession.create = async function (model, options) {
  const s = await create.call(this, model, { ...(options || {}), enableProfiling: true, profileFilePrefix: path.join(folder, 'p') });
  sessions.push(s);
  return s;
};
process.on('exit', (code) => {
  for (const s of sessions) s.endProfiling();
  const files = fs.readdirSync(folder).filter(f => f.endsWith('.json'));
  const ok = code === 0 && files.length === 1;
  if (code === 0 && !ok) {
    console.error(`ort-profile: onnxruntime wrote ${files.length} profiles, expected 1`);
    process.exitCode = 1;
  }
  const per = new Map();
  for (const f of files) {
    for (const e of JSON.parse(fs.readFileSync(path.join(folder, f), 'utf8'))) {
      if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
      const name = e.name.slice(0, -'_kernel_time'.length);
      if (!per.has(name)) per.set(name, { op: (e.args && e.args.op_name) || '', us: [] });
      per.get(name).us.push(e.dur);
    }
  }
  fs.rmSync(folder, { recursive: true, force: true });
  const rows = [...per].map(([node, { op, us }]) => {
    us.sort((a, b) => a - b);
    return { node, op, us: us[Math.floor(us.length / 2)], runs: us.length };
  });
  if (ok) fs.writeFileSync(out, JSON.stringify(rows));
});
process.argv.splice(1, 3, path.resolve(runner));  // ort-run.js sees its own command line
require(path.resolve(runner));
