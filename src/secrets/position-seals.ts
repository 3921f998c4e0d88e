import { Injectable, OnModuleInit } from '@nestjs/common';
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { PositionSealKeyRepository } from './position-seal-key.repository';

const U64_MAX = 0xffff_ffff_ffff_ffffn;
const TAG_BYTES = 8;
/** 16 bytes of block and 8 of tag, in base64url. */
const TOKEN = /^[A-Za-z0-9_-]{32}$/;

/**
 * Two 64-bit numbers sealed into an opaque 32-character token, and opened again, under a key of one
 * context (an organization's event stream, one run's stream, an organization's audit list).
 *
 * Why: the positions clients hand back (an SSE `id:`, a list cursor) are transaction ids and
 * sequences every organization shares. In the clear, the gap between two of one organization's
 * ids counted what every other organization wrote in between; sealed, an id says nothing but
 * itself, and one context's id opens in no other (another organization's, another run's).
 *
 * How: the pair is exactly one AES block, enciphered with AES-256 alone (a block cipher on one
 * block is a pseudorandom permutation: equal pairs give equal tokens and nothing else shows; there
 * is no second block for a mode to chain), then tagged with 8 bytes of HMAC-SHA-256 over the
 * ciphertext, so an edited or made-up token is refused before it is deciphered. Deterministic on
 * purpose: an event has the same id in every stream of its organization, as it had in the clear.
 *
 * Not a secret store: a token carries a position, which the database holds in the clear anyway.
 */
export class PositionSeal {
  private readonly cipherKey: Buffer;
  private readonly macKey: Buffer;

  constructor(secret: Buffer, context: string) {
    const keys = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `position-seal\u0000${context}`, 64));
    this.cipherKey = keys.subarray(0, 32);
    this.macKey = keys.subarray(32);
  }

  seal(a: bigint, b: bigint): string {
    if (a < 0n || a > U64_MAX || b < 0n || b > U64_MAX) throw new RangeError('a sealed position holds two unsigned 64-bit numbers');
    const block = Buffer.alloc(16);
    block.writeBigUInt64BE(a, 0);
    block.writeBigUInt64BE(b, 8);
    const cipher = createCipheriv('aes-256-ecb', this.cipherKey, null).setAutoPadding(false);
    const body = Buffer.concat([cipher.update(block), cipher.final()]);
    return Buffer.concat([body, this.tag(body)]).toString('base64url');
  }

  /** The pair `token` seals under this context, or undefined: not a token, edited, or another context's. */
  open(token: string): [bigint, bigint] | undefined {
    if (!TOKEN.test(token)) return undefined;
    const raw = Buffer.from(token, 'base64url');
    const body = raw.subarray(0, 16);
    if (!timingSafeEqual(raw.subarray(16), this.tag(body))) return undefined;
    const decipher = createDecipheriv('aes-256-ecb', this.cipherKey, null).setAutoPadding(false);
    const block = Buffer.concat([decipher.update(body), decipher.final()]);
    return [block.readBigUInt64BE(0), block.readBigUInt64BE(8)];
  }

  private tag(body: Buffer): Buffer {
    return createHmac('sha256', this.macKey).update(body).digest().subarray(0, TAG_BYTES);
  }
}

/**
 * The seals of every context, under the deployment's secret (table `position_seal_key`, drawn by
 * migration 1764522800000, the same on every node and through SECRETS_KEY rotations).
 */
@Injectable()
export class PositionSeals implements OnModuleInit {
  private secret?: Buffer;

  constructor(private readonly keys: PositionSealKeyRepository) {}

  async onModuleInit(): Promise<void> {
    this.secret = await this.keys.read();
    if (!this.secret) throw new Error('position_seal_key has no key: run the migrations');
  }

  /** Positions in the organization's event stream (`GET /events`' `id:` and `Last-Event-ID`). */
  events(orgId: string): PositionSeal {
    return this.seal(`events\u0000${orgId}`);
  }

  /** Positions in one run's event stream (`GET /runs/{id}/events`). */
  run(orgId: string, runId: string): PositionSeal {
    return this.seal(`run\u0000${orgId}\u0000${runId}`);
  }

  /** The organization's audit list cursor (`GET /audit-events`). */
  audit(orgId: string): PositionSeal {
    return this.seal(`audit\u0000${orgId}`);
  }

  private seal(context: string): PositionSeal {
    if (!this.secret) throw new Error('PositionSeals used before the module was initialized');
    return new PositionSeal(this.secret, context);
  }
}
