// Runs the reference verifier (@sigstore/verify, which we did not write) over the cases written by
// sigstore-make.mjs and prints one JSON line per case: {"name", "ok", "error"}.
//   node sigstore-crosscheck.mjs OUTDIR
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { bundleFromJSON } = require('@sigstore/bundle');
const { TrustedRoot } = require('@sigstore/protobuf-specs');

const out = process.argv[2];
if (!out) {
  console.error('usage: node sigstore-crosscheck.mjs OUTDIR');
  process.exit(2);
}

function checkStatement(env, artifact) {
  if (env.payloadType !== 'application/vnd.in-toto+json') throw new Error('payload type');
  const st = JSON.parse(Buffer.from(env.payload).toString());
  const digests = {
    sha256: crypto.createHash('sha256').update(artifact).digest('hex'),
    sha512: crypto.createHash('sha512').update(artifact).digest('hex'),
  };
  const named = (st.subject || []).some((s) =>
    Object.entries(s.digest || {}).some(([alg, hex]) => digests[alg] === hex));
  if (!named) throw new Error('no subject names the artifact');
}

const casesDir = path.join(out, 'cases');
for (const name of fs.readdirSync(casesDir).sort()) {
  const dir = path.join(casesDir, name);
  const c = JSON.parse(fs.readFileSync(path.join(dir, 'case.json'), 'utf8'));
  let ok = false;
  let error = '';
  try {
    const root = TrustedRoot.fromJSON(JSON.parse(fs.readFileSync(path.join(out, c.root), 'utf8')));
    // timestampThreshold counts SETs and RFC 3161 timestamps together, like minTimestamps.
    const verifier = new Verifier(toTrustMaterial(root), {
      tlogThreshold: 1, ctlogThreshold: 1, timestampThreshold: c.minTimestamps || 1,
    });
    const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(path.join(dir, 'bundle.json'), 'utf8')));
    const entity = toSignedEntity(bundle, fs.readFileSync(path.join(out, c.artifact)));
    verifier.verify(entity, { subjectAlternativeName: c.subject, extensions: { issuer: c.issuer } });
    // @sigstore/verify leaves the DSSE payload to its caller (npm checks the subject itself):
    // do the caller's part, the in-toto payload type and a subject naming the artifact.
    const env = bundle.content.$case === 'dsseEnvelope' ? bundle.content.dsseEnvelope : null;
    if (env) checkStatement(env, fs.readFileSync(path.join(out, c.artifact)));
    ok = true;
  } catch (e) {
    error = `${e.code || e.name}: ${e.message}`;
  }
  console.log(JSON.stringify({ name, ok, error }));
}
