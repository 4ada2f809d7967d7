// ONNX Runtime (onnxruntime-node, the real CPU runtime) runs every case brain_interop_models wrote and compares
// its outputs with brain's predictions: the relative error of each output column (the largest difference over the
// rows divided by the column's largest magnitude) must be at most 1e-5. For brain's own exports it also checks the
// interface: input "input" and output "output", a symbolic batch dimension (runs with 1 row and with all rows).
// For an imported fixture, ONNX Runtime's outputs must also match the fixture's own reference outputs.
// Usage: node ort_check.js CASES_DIR NODE_DIR   (NODE_DIR holds node_modules/onnxruntime-node)
'use strict';
const fs = require('fs');
const path = require('path');

const TOLERANCE = 1e-5;
const [casesDir, nodeDir] = process.argv.slice(2);
if (!casesDir || !nodeDir) {
  console.error('usage: node ort_check.js CASES_DIR NODE_DIR');
  process.exit(2);
}

let ort;
try {
  ort = require(path.join(path.resolve(nodeDir), 'node_modules', 'onnxruntime-node'));
} catch (e) {
  const log = path.join(nodeDir, 'npm.log');
  console.log(`SKIP: onnxruntime-node is not installed in ${nodeDir} (the test set-up's npm install did not ` +
              `complete${fs.existsSync(log) ? ': see ' + log : ''})`);
  process.exit(0);
}

// Largest column-wise relative error of `got` (flat, row-major) against rows of `want`.
function relativeError(got, want) {
  const cols = want[0].length;
  let worst = 0;
  for (let c = 0; c < cols; ++c) {
    let scale = 0, diff = 0;
    for (let r = 0; r < want.length; ++r) {
      scale = Math.max(scale, Math.abs(want[r][c]));
      diff = Math.max(diff, Math.abs(got[r * cols + c] - want[r][c]));
    }
    worst = Math.max(worst, diff / (scale > 0 ? scale : 1));
  }
  return worst;
}

async function run(session, inputs, shape) {
  const feed = {};
  feed[session.inputNames[0]] = new ort.Tensor('float32', Float32Array.from(inputs.flat()), [inputs.length, ...shape]);
  const result = await session.run(feed);
  return result[session.outputNames[0]];
}

async function check(file) {
  const c = JSON.parse(fs.readFileSync(file, 'utf8'));
  const problems = [];
  const session = await ort.InferenceSession.create(c.model, {logSeverityLevel: 3});
  const output = await run(session, c.inputs, c.input_shape);
  if (output.dims.length !== 2 || output.dims[0] !== c.inputs.length || output.dims[1] !== c.expected[0].length)
    problems.push(`output shape [${output.dims}], expected [${c.inputs.length}, ${c.expected[0].length}]`);
  const error = relativeError(output.data, c.expected);
  if (!(error <= TOLERANCE)) problems.push(`relative error ${error.toExponential(2)} > ${TOLERANCE}`);
  // A fixture's own reference (PyTorch's outputs, or the float64 reference that made it) holds for the runtime too.
  if (c.reference) {
    const refError = relativeError(output.data, c.reference);
    if (!(refError <= TOLERANCE))
      problems.push(`against the fixture's reference outputs: relative error ${refError.toExponential(2)}`);
  }
  if (c.brain_export) {
    if (session.inputNames.join() !== 'input' || session.outputNames.join() !== 'output')
      problems.push(`names ${session.inputNames} -> ${session.outputNames}, expected input -> output`);
    const meta = session.inputMetadata ? session.inputMetadata[0] : undefined;
    if (meta && meta.shape && typeof meta.shape[0] !== 'string')
      problems.push(`the batch dimension is ${meta.shape[0]}, not symbolic`);
    const one = await run(session, c.inputs.slice(0, 1), c.input_shape);
    const oneError = relativeError(one.data, c.expected.slice(0, 1));
    if (!(oneError <= TOLERANCE)) problems.push(`a batch of one row: relative error ${oneError.toExponential(2)}`);
  }
  return {error, problems, what: c.what, rows: c.inputs.length};
}

(async () => {
  const files = fs.readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort();
  if (files.length === 0) {
    console.log(`no cases in ${casesDir}`);
    process.exit(1);
  }
  let passed = 0, failed = 0, worst = 0;
  for (const f of files) {
    const name = f.replace(/\.json$/, '');
    try {
      const r = await check(path.join(casesDir, f));
      worst = Math.max(worst, r.error);
      if (r.problems.length === 0) {
        ++passed;
        console.log(`ok     ${name}: ${r.what}; ${r.rows} rows, relative error ${r.error.toExponential(2)}`);
      } else {
        ++failed;
        console.log(`FAIL   ${name}: ${r.what}; ${r.problems.join('; ')}`);
      }
    } catch (e) {
      ++failed;
      console.log(`FAIL   ${name}: ONNX Runtime: ${e.message}`);
    }
  }
  const version = require(path.join(path.resolve(nodeDir), 'node_modules', 'onnxruntime-node', 'package.json')).version;
  console.log(`onnxruntime-node ${version}: ${passed} passed, ${failed} failed; largest relative error ` +
              `${worst.toExponential(2)} (tolerance ${TOLERANCE})`);
  process.exit(failed === 0 ? 0 : 1);
})();
