// Makes fresh Sigstore test material with a private trust root, offline:
//   node sigstore-make.mjs OUTDIR [ARTIFACT[::REF]...]
// The first ARTIFACT, when given, is the file the cases sign (a release archive of the installer's
// tests) instead of a few random bytes; every ARTIFACT is also signed on its own under the same
// root into OUTDIR/signed/<its file name>.json (the demo's releases).
// Certificates carry the GitHub workflow facts a release workflow's would (Fulcio's extensions,
// made by @sigstore/mock from the token's claims): repository example/release, workflow "Release"
// (release.yml) and ref refs/tags/v1.0.0, or REF for an ARTIFACT given as ARTIFACT::REF.
// A real signer (@sigstore/sign) signs an artifact while its Fulcio and Rekor calls are answered
// in-process by @sigstore/mock (through nock). The script writes:
//   OUTDIR/trusted_root.json            the private root (CA, Rekor key, CT log key)
//   OUTDIR/artifact                     the signed artifact, OUTDIR/other-artifact a different one
//   OUTDIR/cases/<name>/bundle.json     one bundle per case
//   OUTDIR/cases/<name>/case.json       {artifact, subject, issuer, expect: "ok" | "<step>:"}
// Tampered cases that must fail at a later step are "resealed": the log's SET, inclusion proof and
// checkpoint are recomputed with the private Rekor key, so only the intended check can catch them.
// The root also holds a timestamp authority (@sigstore/mock's TSA, asked by @sigstore/sign's
// TSAWitness) and a Rekor v2-style log: an Ed25519 key whose checkpoints (C2SP signed notes) and
// hashedrekord 0.0.2 entries are written here, since the mock's v2 log signs with ECDSA.
// case.json may carry minTimestamps (update.signature.minTimestamps; default 1).
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(import.meta.url);
const nock = require('nock');
const mock = require('@sigstore/mock');
const sign = require('@sigstore/sign');
const { bundleToJSON } = require('@sigstore/bundle');

const FULCIO_URL = 'https://fulcio.mock.test';
const REKOR_URL = 'https://rekor.mock.test';
const TSA_URL = 'https://tsa.mock.test';
const REKOR_V2_ORIGIN = 'log2026.rekor.mock.test';
const SUBJECT = 'https://github.com/example/release/.github/workflows/release.yml@refs/tags/v1.0.0';
const ISSUER = 'https://token.actions.githubusercontent.com';

const out = process.argv[2];
if (!out) {
  console.error('usage: node sigstore-make.mjs OUTDIR');
  process.exit(2);
}

const b64 = (buf) => Buffer.from(buf).toString('base64');
const sha256 = (...parts) => {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const keyPair = () => crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const spki = (k) => k.export({ format: 'der', type: 'spki' });

const REF = 'refs/tags/v1.0.0';

// The GitHub Actions claims the mock Fulcio turns into certificate extensions.
const githubClaims = (ref) => ({
  event_name: 'push',
  sha: '0123456789abcdef0123456789abcdef01234567',
  workflow: 'Release',
  repository: 'example/release',
  ref,
  workflow_ref: `example/release/.github/workflows/release.yml@${ref}`,
});

// An unsigned JWT is enough: the mock Fulcio decodes it without checking.
function token(sub, iss, ref) {
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const claims = { sub, iss, aud: 'sigstore', ...githubClaims(ref) };
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.sig`;
}

// --- one signing run: a CA, CT log and Rekor log answering over nock -----------------------------
async function makeServices(rekorClock, tsaClock) {
  const caKeys = keyPair();
  const ctKeys = keyPair();
  const rekorKeys = keyPair();
  const ctlog = await mock.initializeCTLog(ctKeys);
  const ca = await mock.initializeCA(caKeys, ctlog);
  const tlog = await mock.initializeTLog(REKOR_URL, rekorKeys, rekorClock);
  const tsa = await mock.initializeTSA(keyPair(), tsaClock);
  // genTime in whole seconds: the mock's encoder trims the milliseconds' trailing zeros (".12Z"),
  // which the reference verifier's GeneralizedTime pattern (none or exactly three digits) refuses,
  // so one run in ten disagreed. A whole second is never before the leaf's notBefore, which X.509
  // also keeps in whole seconds.
  tsa.getCurrentTime = () => {
    const t = tsaClock ? tsaClock.getTime() : Date.now();
    return new Date(Math.floor(t / 1000) * 1000);
  };
  const v2Keys = crypto.generateKeyPairSync('ed25519');
  return { ca, ctlog, ctKeys, rekorKeys, tlog, tsa, v2Keys };
}

// Options: `dsse`, to sign an in-toto statement (a Buffer) as a DSSE envelope instead of a message
// signature, logged as an `intoto` 0.0.2 entry (or `dsse` 0.0.1, rewritten by dsseBody below);
// `ref`, the tag the token's GitHub claims name (the certificate's ref extensions); `timestamp`,
// to add an RFC 3161 timestamp from the mock TSA to the Rekor v1 entry.
async function signWith(services, artifact, subject, issuer,
  { dsse = null, ref = REF, timestamp = false } = {}) {
  nock.cleanAll();
  const fulcio = mock.fulcioHandler(services.ca);
  const rekor = mock.rekorHandler(services.tlog);
  const adapt = (fn) => async (_uri, body) => {
    const r = await fn(typeof body === 'string' ? body : JSON.stringify(body));
    return [r.statusCode, r.response, { 'Content-Type': r.contentType || 'text/plain' }];
  };
  nock(FULCIO_URL).post(fulcio.path).reply(adapt(fulcio.fn));
  nock(REKOR_URL).post(rekor.path).reply(adapt(rekor.fn));
  const tsa = mock.tsaHandler(services.tsa);
  nock(TSA_URL).post(tsa.path).reply(adapt(tsa.fn));
  const signer = new sign.FulcioSigner({
    fulcioBaseURL: FULCIO_URL,
    identityProvider: { getToken: async () => token(subject, issuer, ref) },
  });
  const witness = new sign.RekorWitness({ rekorBaseURL: REKOR_URL, entryType: dsse?.entryType });
  const witnesses = [witness];
  if (timestamp) witnesses.push(new sign.TSAWitness({ tsaBaseURL: TSA_URL }));
  if (dsse) {
    const builder = new sign.DSSEBundleBuilder({ signer, witnesses });
    const type = dsse.payloadType || 'application/vnd.in-toto+json';
    return bundleToJSON(await builder.create({ data: artifact, type }));
  }
  const builder = new sign.MessageSignatureBundleBuilder({ signer, witnesses });
  const bundle = await builder.create({ data: artifact });
  return bundleToJSON(bundle);
}

function trustedRoot(services) {
  const start = new Date(Date.now() - 24 * 3600 * 1000).toISOString();
  const rekorSpki = spki(services.rekorKeys.publicKey);
  const ctSpki = spki(services.ctKeys.publicKey);
  return {
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [{
      baseUrl: REKOR_URL,
      hashAlgorithm: 'SHA2_256',
      publicKey: { rawBytes: b64(rekorSpki), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start } },
      logId: { keyId: b64(sha256(rekorSpki)) },
    }, {
      baseUrl: `https://${REKOR_V2_ORIGIN}`,
      hashAlgorithm: 'SHA2_256',
      publicKey: { rawBytes: b64(spki(services.v2Keys.publicKey)), keyDetails: 'PKIX_ED25519', validFor: { start } },
      logId: { keyId: b64(v2LogId(services.v2Keys.publicKey)) },
    }],
    certificateAuthorities: [{
      subject: { organization: 'sigstore.mock', commonName: 'sigstore' },
      uri: FULCIO_URL,
      certChain: { certificates: [{ rawBytes: b64(Buffer.from(services.ca.rootCertificate.buffer)) }] },
      validFor: { start },
    }],
    ctlogs: [{
      baseUrl: 'https://ctfe.mock.test',
      hashAlgorithm: 'SHA2_256',
      publicKey: { rawBytes: b64(ctSpki), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start } },
      logId: { keyId: b64(Buffer.from(services.ctlog.logID.buffer)) },
    }],
    timestampAuthorities: [tsaAuthority(services.tsa, start)],
  };
}

function tsaAuthority(tsa, start) {
  return {
    subject: { organization: 'sigstore.mock', commonName: 'tsa' },
    uri: TSA_URL,
    certChain: { certificates: [{ rawBytes: b64(tsa.intCertificate) }, { rawBytes: b64(tsa.rootCertificate) }] },
    validFor: { start },
  };
}

// --- log evidence, recomputed with the private Rekor key ----------------------------------------
const leafHash = (data) => sha256(Buffer.from([0]), data);
const nodeHash = (l, r) => sha256(Buffer.from([1]), l, r);

function mth(leaves) {
  if (leaves.length === 1) return leafHash(leaves[0]);
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

// RFC 6962 section 2.1.1 audit path.
function auditPath(m, leaves) {
  if (leaves.length === 1) return [];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  if (m < k) return [...auditPath(m, leaves.slice(0, k)), mth(leaves.slice(k))];
  return [...auditPath(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

function checkpoint(rekorKeys, size, root) {
  const host = new URL(REKOR_URL).host;
  const note = `${host} - 1234567\n${size}\n${b64(root)}\n`;
  const sig = crypto.sign('sha256', Buffer.from(note), rekorKeys.privateKey);
  const hint = sha256(spki(rekorKeys.publicKey)).subarray(0, 4);
  return `${note}\n\u2014 ${host} ${b64(Buffer.concat([hint, sig]))}\n`;
}

// Re-signs the SET and rebuilds proof + checkpoint for the entry's current body, placing the leaf
// at `index` in a tree of `size` leaves (the other leaves are random).
function reseal(bundle, rekorKeys, { size = 1, index = 0 } = {}) {
  const e = bundle.verificationMaterial.tlogEntries[0];
  const body = Buffer.from(e.canonicalizedBody, 'base64');
  const setPayload = `{"body":"${e.canonicalizedBody}","integratedTime":${Number(e.integratedTime)},` +
    `"logID":"${Buffer.from(e.logId.keyId, 'base64').toString('hex')}","logIndex":${Number(e.logIndex)}}`;
  e.inclusionPromise = {
    signedEntryTimestamp: b64(crypto.sign('sha256', Buffer.from(setPayload), rekorKeys.privateKey)),
  };
  const leaves = [];
  for (let i = 0; i < size; i++) leaves.push(i === index ? body : crypto.randomBytes(40));
  const root = mth(leaves);
  e.inclusionProof = {
    logIndex: String(index),
    rootHash: b64(root),
    treeSize: String(size),
    hashes: auditPath(index, leaves).map(b64),
    checkpoint: { envelope: checkpoint(rekorKeys, size, root) },
  };
  return bundle;
}

// --- Rekor v2: hashedrekord 0.0.2, Ed25519 checkpoints, no SET ---------------------------------
// The C2SP signed-note key ID, which the trusted root lists as the log's keyId:
// SHA-256(origin || "\n" || 0x01 || raw Ed25519 key).
function v2LogId(publicKey) {
  return sha256(Buffer.from(`${REKOR_V2_ORIGIN}\n`), Buffer.from([1]), spki(publicKey).subarray(12));
}

// Replaces the bundle's (v0.3) entry by a Rekor v2 one for the same signature; the checkpoint is
// signed by `signingKey` (the log's own key unless a forgery is wanted) under the log's key hint.
function toRekorV2(bundle, v2Keys, { signingKey = v2Keys.privateKey, size = 5, index = 3 } = {}) {
  const vm = bundle.verificationMaterial;
  const body = {
    apiVersion: '0.0.2',
    kind: 'hashedrekord',
    spec: { hashedRekordV002: {
      data: { algorithm: 'SHA2_256', digest: bundle.messageSignature.messageDigest.digest },
      signature: {
        content: bundle.messageSignature.signature,
        verifier: { keyDetails: 'PKIX_ECDSA_P256_SHA_256', x509Certificate: { rawBytes: vm.certificate.rawBytes } },
      },
    } },
  };
  const bodyBytes = Buffer.from(JSON.stringify(body));
  const leaves = [];
  for (let i = 0; i < size; i++) leaves.push(i === index ? bodyBytes : crypto.randomBytes(40));
  const root = mth(leaves);
  const logId = v2LogId(v2Keys.publicKey);
  const note = `${REKOR_V2_ORIGIN}\n${size}\n${b64(root)}\n`;
  const sig = crypto.sign(null, Buffer.from(note), signingKey);
  const envelope = `${note}\n\u2014 ${REKOR_V2_ORIGIN} ${b64(Buffer.concat([logId.subarray(0, 4), sig]))}\n`;
  vm.tlogEntries = [{
    logIndex: String(index),
    logId: { keyId: b64(logId) },
    kindVersion: { kind: 'hashedrekord', version: '0.0.2' },
    inclusionProof: {
      logIndex: String(index), rootHash: b64(root), treeSize: String(size),
      hashes: auditPath(index, leaves).map(b64), checkpoint: { envelope },
    },
    canonicalizedBody: b64(bodyBytes),
  }];
  return bundle;
}

// An RFC 3161 response from `tsa` over `payload` (what it would stamp for a bundle signing it).
async function timestampOver(tsa, payload) {
  const der = await tsa.timestamp({
    artifactHash: sha256(payload), hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
    nonce: 7, policyOID: '1.3.6.1.4.1.57264.2', certReq: true,
  });
  return b64(Buffer.from(der.buffer, der.byteOffset, der.byteLength));
}

function editBody(bundle, edit) {
  const e = bundle.verificationMaterial.tlogEntries[0];
  const body = JSON.parse(Buffer.from(e.canonicalizedBody, 'base64').toString());
  edit(body);
  e.canonicalizedBody = b64(Buffer.from(JSON.stringify(body)));
}

// An in-toto Statement v1 naming one subject by the given digests ({ sha256: hex, ... }).
function statement(digest) {
  return Buffer.from(JSON.stringify({
    _type: 'https://in-toto.io/Statement/v1',
    subject: [{ name: 'otelcol-contrib.tar.gz', digest }],
    predicateType: 'https://slsa.dev/provenance/v1',
    predicate: { buildDefinition: { buildType: 'https://example.com/release/v1' } },
  }));
}

// The mock log stores the proposed `dsse` entry as its body; Rekor stores another shape (hashes
// of the envelope and payload, the signature and its verifier). Rewrite it so, then reseal.
function dsseBody(bundle, rekorKeys) {
  const env = bundle.dsseEnvelope;
  editBody(bundle, (b) => {
    const verifier = b.spec.proposedContent.verifiers[0];
    delete b.spec.proposedContent;
    b.spec.envelopeHash = { algorithm: 'sha256', value: sha256(JSON.stringify(env)).toString('hex') };
    b.spec.payloadHash = {
      algorithm: 'sha256', value: sha256(Buffer.from(env.payload, 'base64')).toString('hex') };
    b.spec.signatures = [{ signature: env.signatures[0].sig, verifier }];
  });
  return reseal(bundle, rekorKeys);
}

function flipB64(s, at = 10) {
  const buf = Buffer.from(s, 'base64');
  buf[Math.min(at, buf.length - 1)] ^= 0x01;
  return b64(buf);
}

function toV03(bundle) {
  const leaf = bundle.verificationMaterial.x509CertificateChain.certificates[0];
  delete bundle.verificationMaterial.x509CertificateChain;
  bundle.verificationMaterial.certificate = leaf;
  bundle.mediaType = 'application/vnd.dev.sigstore.bundle.v0.3+json';
  return bundle;
}

// --- the cases ------------------------------------------------------------------------------------
// RFC 3161 timestamps and Rekor v2: accepted, and each new check's failure shown.
async function addTimestampCases(services, artifact, add, cases) {
  const stamped = toV03(await signWith(services, artifact, SUBJECT, ISSUER, { timestamp: true }));
  const clone = () => JSON.parse(JSON.stringify(stamped));
  const stamps = (b) => b.verificationMaterial.timestampVerificationData.rfc3161Timestamps;
  add('ok-set-and-timestamp', clone(), 'ok');
  add('ok-set-and-timestamp-min-2', clone(), 'ok');
  cases[cases.length - 1].minTimestamps = 2;
  add('timestamps-below-policy', clone(), 'timestamps:');
  cases[cases.length - 1].minTimestamps = 3;
  const imprint = clone();
  stamps(imprint)[0].signedTimestamp = await timestampOver(services.tsa, Buffer.from('another signature'));
  add('timestamp-imprint-mismatch', imprint, 'timestamp:');
  const foreign = await makeServices();
  const untrusted = clone();
  stamps(untrusted)[0].signedTimestamp =
    await timestampOver(foreign.tsa, Buffer.from(untrusted.messageSignature.signature, 'base64'));
  add('timestamp-untrusted-tsa', untrusted, 'timestamp:');
  // A TSA whose clock runs an hour ahead: genTime is after the ten-minute leaf expired.
  const late = await makeServices(undefined, new Date(Date.now() + 3600 * 1000));
  const lateStamp = clone();
  stamps(lateStamp)[0].signedTimestamp =
    await timestampOver(late.tsa, Buffer.from(lateStamp.messageSignature.signature, 'base64'));
  const lateRoot = trustedRoot(services);
  lateRoot.timestampAuthorities = [tsaAuthority(late.tsa, lateRoot.tlogs[0].publicKey.validFor.start)];
  fs.mkdirSync(path.join(out, 'late-tsa'), { recursive: true });
  fs.writeFileSync(path.join(out, 'late-tsa', 'trusted_root.json'), JSON.stringify(lateRoot, null, 2));
  add('timestamp-outside-certificate-validity', lateStamp, 'timestamp:');
  cases[cases.length - 1].root = 'late-tsa/trusted_root.json';

  add('ok-rekor2-with-timestamp', toRekorV2(clone(), services.v2Keys), 'ok');
  const forger = crypto.generateKeyPairSync('ed25519');
  add('rekor2-checkpoint-forged',
    toRekorV2(clone(), services.v2Keys, { signingKey: forger.privateKey }), 'checkpoint:');
  const bare = toRekorV2(clone(), services.v2Keys);
  delete bare.verificationMaterial.timestampVerificationData;
  add('rekor2-without-timestamp', bare, 'timestamp:');
}

async function main() {
  fs.mkdirSync(path.join(out, 'cases'), { recursive: true });
  const artifact = process.argv[3]
    ? fs.readFileSync(process.argv[3].split('::')[0])
    : Buffer.from(`myriarch test artifact ${crypto.randomBytes(8).toString('hex')}\n`);
  const other = Buffer.from('a different artifact\n');
  fs.writeFileSync(path.join(out, 'artifact'), artifact);
  fs.writeFileSync(path.join(out, 'other-artifact'), other);

  const services = await makeServices();
  fs.writeFileSync(path.join(out, 'trusted_root.json'), JSON.stringify(trustedRoot(services), null, 2));
  const base = await signWith(services, artifact, SUBJECT, ISSUER);
  const clone = () => JSON.parse(JSON.stringify(base));

  const cases = [];
  const add = (name, bundle, expect, opts = {}) =>
    cases.push({ name, bundle, expect, artifact: opts.artifact || 'artifact',
      subject: opts.subject || SUBJECT, issuer: opts.issuer || ISSUER });

  // Accepted.
  add('ok-v0.2', clone(), 'ok');
  add('ok-v0.3', toV03(clone()), 'ok');
  const v01 = clone();
  v01.mediaType = 'application/vnd.dev.sigstore.bundle+json;version=0.1';
  add('ok-v0.1', v01, 'ok');
  add('ok-proof-tree-of-13', reseal(toV03(clone()), services.rekorKeys, { size: 13, index: 9 }), 'ok');

  // Rejected, each at the step named.
  add('tampered-artifact', clone(), 'artifact:', { artifact: 'other-artifact' });
  const sig = clone();
  sig.messageSignature.signature = flipB64(sig.messageSignature.signature, 20);
  add('tampered-signature', sig, 'tlog body:');
  const sigSealed = clone();
  sigSealed.messageSignature.signature = flipB64(sigSealed.messageSignature.signature, 20);
  editBody(sigSealed, (b) => { b.spec.signature.content = sigSealed.messageSignature.signature; });
  add('tampered-signature-resealed', reseal(sigSealed, services.rekorKeys), 'signature:');
  const set = clone();
  const te = set.verificationMaterial.tlogEntries[0];
  te.inclusionPromise.signedEntryTimestamp = flipB64(te.inclusionPromise.signedEntryTimestamp, 20);
  add('tampered-set', set, 'SET:');
  const cp = reseal(clone(), services.rekorKeys, { size: 6, index: 2 });
  const cpe = cp.verificationMaterial.tlogEntries[0].inclusionProof.checkpoint;
  const lines = cpe.envelope.split('\n');
  const sigLine = lines.findIndex((l) => l.startsWith('\u2014 '));
  const parts = lines[sigLine].split(' ');
  parts[2] = flipB64(parts[2], 30);
  lines[sigLine] = parts.join(' ');
  cpe.envelope = lines.join('\n');
  add('tampered-checkpoint-signature', cp, 'checkpoint:');
  const proof = reseal(toV03(clone()), services.rekorKeys, { size: 13, index: 9 });
  const ph = proof.verificationMaterial.tlogEntries[0].inclusionProof.hashes;
  ph[1] = flipB64(ph[1], 5);
  add('tampered-proof-hash', proof, 'inclusion proof:');
  const body = clone();
  editBody(body, (b) => { b.spec.data.hash.value = sha256(other).toString('hex'); });
  add('tampered-body-digest', reseal(body, services.rekorKeys), 'tlog body:');
  const bodyUnsealed = clone();
  editBody(bodyUnsealed, (b) => { b.spec.data.hash.value = sha256(other).toString('hex'); });
  add('tampered-body-unsealed', bodyUnsealed, 'SET:');
  add('wrong-identity', clone(), 'identity:', {
    subject: 'https://github.com/example/release/.github/workflows/release.yml@refs/heads/main' });
  add('wrong-issuer', clone(), 'identity:', { issuer: 'https://accounts.google.com' });

  // DSSE envelopes over an in-toto statement naming the artifact.
  const sha = sha256(artifact).toString('hex');
  const sha512 = crypto.createHash('sha512').update(artifact).digest('hex');
  const dsse = (digest, opts = {}) =>
    signWith(services, statement(digest), SUBJECT, ISSUER, { dsse: { entryType: 'intoto', ...opts } });
  add('ok-dsse-intoto', await dsse({ sha256: sha }), 'ok');
  add('ok-dsse', dsseBody(await dsse({ sha256: sha }, { entryType: 'dsse' }), services.rekorKeys), 'ok');
  add('ok-dsse-sha512-subject', await dsse({ sha512 }), 'ok');
  add('dsse-other-subject', await dsse({ sha256: sha256(other).toString('hex') }), 'artifact:');
  add('dsse-other-payload-type', await dsse({ sha256: sha }, { payloadType: 'application/json' }),
    'artifact:');
  const dsseSig = await dsse({ sha256: sha });
  dsseSig.dsseEnvelope.signatures[0].sig = flipB64(dsseSig.dsseEnvelope.signatures[0].sig, 20);
  add('dsse-tampered-signature', dsseSig, 'tlog body:');
  // The same signature in the log too: only the PAE signature check can tell.
  const dsseSealed = JSON.parse(JSON.stringify(dsseSig));
  editBody(dsseSealed, (b) => {
    b.spec.content.envelope.signatures[0].sig = b64(dsseSealed.dsseEnvelope.signatures[0].sig);
  });
  add('dsse-tampered-signature-resealed', reseal(dsseSealed, services.rekorKeys), 'signature:');
  const dssePayload = await dsse({ sha256: sha });
  dssePayload.dsseEnvelope.payload = b64(statement({ sha256: sha, md5: 'ab' }));
  add('dsse-tampered-payload', dssePayload, 'tlog body:');
  add('dsse-wrong-identity', await dsse({ sha256: sha }), 'identity:', {
    subject: 'https://github.com/example/release/.github/workflows/release.yml@refs/heads/main' });

  // A log that stamps the entry an hour after the ten-minute certificate expired.
  const late = await makeServices(new Date(Date.now() + 3600 * 1000));
  const lateBundle = await signWith(late, artifact, SUBJECT, ISSUER);
  fs.mkdirSync(path.join(out, 'late'), { recursive: true });
  fs.writeFileSync(path.join(out, 'late', 'trusted_root.json'), JSON.stringify(trustedRoot(late), null, 2));
  add('time-outside-certificate-validity', lateBundle, 'certificate chain:');
  cases[cases.length - 1].root = 'late/trusted_root.json';

  // Signed under a different (untrusted) root.
  const foreign = await makeServices();
  const foreignBundle = await signWith(foreign, artifact, SUBJECT, ISSUER);
  add('untrusted-root', foreignBundle, 'tlog entry:');
  // The foreign log and CT log are trusted, the foreign CA is not.
  const mixed = trustedRoot(foreign);
  mixed.certificateAuthorities = trustedRoot(services).certificateAuthorities;
  fs.mkdirSync(path.join(out, 'untrusted-ca'), { recursive: true });
  fs.writeFileSync(path.join(out, 'untrusted-ca', 'trusted_root.json'), JSON.stringify(mixed, null, 2));
  add('untrusted-ca', JSON.parse(JSON.stringify(foreignBundle)), 'certificate chain:');
  cases[cases.length - 1].root = 'untrusted-ca/trusted_root.json';
  // The foreign CA and log are trusted, its CT log is not.
  const noCt = trustedRoot(foreign);
  noCt.ctlogs = trustedRoot(services).ctlogs;
  fs.mkdirSync(path.join(out, 'untrusted-ctlog'), { recursive: true });
  fs.writeFileSync(path.join(out, 'untrusted-ctlog', 'trusted_root.json'), JSON.stringify(noCt, null, 2));
  add('untrusted-ctlog', JSON.parse(JSON.stringify(foreignBundle)), 'SCT:');
  cases[cases.length - 1].root = 'untrusted-ctlog/trusted_root.json';

  await addTimestampCases(services, artifact, add, cases);

  for (const c of cases) {
    const dir = path.join(out, 'cases', c.name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'bundle.json'), JSON.stringify(c.bundle, null, 2));
    fs.writeFileSync(path.join(dir, 'case.json'), JSON.stringify({
      artifact: c.artifact, subject: c.subject, issuer: c.issuer, expect: c.expect,
      root: c.root || 'trusted_root.json', minTimestamps: c.minTimestamps || 1,
    }, null, 2));
  }
  const extra = process.argv.slice(3);
  if (extra.length) fs.mkdirSync(path.join(out, 'signed'), { recursive: true });
  for (const arg of extra) {
    const [file, ref] = arg.split('::');
    const b = await signWith(services, fs.readFileSync(file), SUBJECT, ISSUER, { ref: ref || REF });
    fs.writeFileSync(path.join(out, 'signed', path.basename(file) + '.json'), JSON.stringify(b, null, 2));
  }
  nock.cleanAll();
  console.log(`wrote ${cases.length} cases to ${out}`);
}

main().catch((e) => {
  console.error(`sigstore-make: ${e.stack || e}`);
  process.exit(1);
});
