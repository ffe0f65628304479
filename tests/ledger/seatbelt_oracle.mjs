// mcp-seatbelt's signed audit log, as its src/audit.ts computes it, run by node:
// the reference the Python implementation is checked against.
//   node seatbelt_oracle.mjs sign SECRET < entries.json      -> signed JSONL on stdout
//   node seatbelt_oracle.mjs verify FILE SECRET              -> {"total": n, "tampered": [line, ...]}
//   node seatbelt_oracle.mjs stringify < values.jsonl        -> JSON.stringify(JSON.parse(line)) per line
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';

const hmacOf = (secret, seq, entry) =>
  createHmac('sha256', secret).update(String(seq) + JSON.stringify(entry)).digest('hex');

const [mode, a, b] = process.argv.slice(2);
if (mode === 'sign') {
  const entries = JSON.parse(readFileSync(0, 'utf-8'));
  let seq = 0;
  for (const entry of entries) {
    const signed = { _seq: seq, _hmac: '', ...entry };
    signed._hmac = hmacOf(a, seq, entry);
    process.stdout.write(JSON.stringify(signed) + '\n');
    seq++;
  }
} else if (mode === 'verify') {
  const lines = readFileSync(a, 'utf-8').split('\n');
  let total = 0;
  const tampered = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    const entry = JSON.parse(line.trim());
    const { _seq, _hmac, ...rest } = entry;
    total++;
    if (_hmac !== hmacOf(b, _seq, rest)) tampered.push(i + 1);
  });
  process.stdout.write(JSON.stringify({ total, tampered }));
} else if (mode === 'stringify') {
  for (const line of readFileSync(0, 'utf-8').split('\n')) {
    if (line.trim()) process.stdout.write(JSON.stringify(JSON.parse(line)) + '\n');
  }
}
