// The smrf npm package as an oracle for runtime/smrf.py (tests/test_smrf_oracle.py).
// One request per stdin line, one answer per stdout line, both JSON:
//   {"op": "encode", "message": {sender, recipient, ttlMs, isTtlAbsolute, isCompressed,
//                                headers: [[key, value], ...], body: <base64>,
//                                signature: <base64> | null}}
//     -> {"ok": true, "frame": <base64>}
//   {"op": "decode", "frame": <base64>}
//     -> {"ok": true, "message": {... as above, headers in the package's order}}
// A failure answers {"ok": false, "error": <text>}; the process keeps serving.
'use strict';

const readline = require('readline');
const smrf = require('smrf');

function encode(request) {
    const headers = {};
    for (const [key, value] of request.headers) {
        headers[key] = value;
    }
    const message = {
        sender: request.sender,
        recipient: request.recipient,
        ttlMs: request.ttlMs,
        isTtlAbsolute: request.isTtlAbsolute,
        headers,
        body: Buffer.from(request.body, 'base64'),
        isCompressed: request.isCompressed,
    };
    if (request.signature !== null && request.signature !== undefined) {
        const signature = Buffer.from(request.signature, 'base64');
        message.signingCallback = () => signature;
    }
    return { ok: true, frame: smrf.serialize(message).toString('base64') };
}

function decode(frame) {
    const message = smrf.deserialize(Buffer.from(frame, 'base64'));
    return {
        ok: true,
        message: {
            sender: message.sender,
            recipient: message.recipient,
            ttlMs: message.ttlMs,
            isTtlAbsolute: message.isTtlAbsolute,
            isCompressed: message.isCompressed,
            headers: Object.entries(message.headers),
            body: Buffer.from(message.body).toString('base64'),
            signature: message.signature ? Buffer.from(message.signature).toString('base64') : null,
        },
    };
}

function answer(line) {
    try {
        const request = JSON.parse(line);
        if (request.op === 'encode') return encode(request.message);
        if (request.op === 'decode') return decode(request.frame);
        if (request.op === 'version') return { ok: true, version: require('smrf/package.json').version };
        return { ok: false, error: `unknown op ${request.op}` };
    } catch (error) {
        return { ok: false, error: String(error && error.message ? error.message : error) };
    }
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on('line', (line) => {
    process.stdout.write(JSON.stringify(answer(line)) + '\n');
});
