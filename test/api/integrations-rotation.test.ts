/**
 * Rotating the master secret key: every stored provider token moves to the new key in one
 * transaction; an interrupted rotation finishes when run again; nothing changes when a token cannot
 * be moved; and the `spanbase secrets rotate` command does it on a real data directory.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { startServices } from '../../src/server.ts';
import { IntegrationsService } from '../../src/services/integrations.ts';
import { Keyring } from '../../src/services/keyring.ts';
import { RotationError, resealTokens, rotateSecretKey } from '../../src/services/secret-rotation.ts';
import { IntegrationsRepo } from '../../src/store/integrations.ts';
import { UsersRepo } from '../../src/store/users.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const GW = '/v2/integrations/example_gateway';
const gw = (token: string) => ({ endpoint: 'https://gateway.example.com/v1', use_case: 'chat', token });

for (const store of storesUnderTest()) {
  describe(`secret key rotation [${store}]`, () => {
    let s: TestServer;
    let keyFile: string;
    const tokens = new Map<string, string>();
    before(async () => {
      s = await startTestServer(store);
      keyFile = path.join(s.config.dataDir, 'secret.key');
      for (let n = 0; n < 3; n++) {
        const u = await s.user();
        const t = `sk-rotate-${n}-${crypto.randomBytes(8).toString('hex')}`;
        const r = await s.call('PUT', GW, gw(t), u.key);
        assert.equal(r.status, 200, r.text);
        tokens.set(r.body.id, t);
      }
    });
    after(() => s.close());

    /** The integrations service as a freshly started process would build it from the config. */
    const fresh = (keyring = Keyring.load(s.config)) => {
      const st = s.running.services.store;
      return new IntegrationsService(new IntegrationsRepo(st.db, st.dialect), new UsersRepo(st.db), keyring);
    };
    const sealedRows = () =>
      s.running.services.store.db
        .selectFrom('integrations')
        .select(['id', 'token_ciphertext', 'key_id'])
        .orderBy('id')
        .execute();
    async function allOpen(service = fresh()) {
      for (const [id, t] of tokens) assert.equal(await service.tokenFor(id), t);
    }

    test('rotate with a generated key: all tokens re-sealed, key file replaced (0600)', async () => {
      const oldKey = fs.readFileSync(keyFile, 'utf8');
      const before = await sealedRows();
      const out = await rotateSecretKey(s.config, s.running.services.store, undefined);
      assert.deepEqual(out, { resealed: tokens.size, already: 0, keyFile, newKeyHex: null });
      const newKey = fs.readFileSync(keyFile, 'utf8');
      assert.notEqual(newKey, oldKey);
      assert.match(newKey, /^[0-9a-f]{64}\n$/);
      assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
      assert.ok(!fs.existsSync(`${keyFile}.next`));
      const afterRows = await sealedRows();
      for (let i = 0; i < before.length; i++) {
        assert.notEqual(afterRows[i].token_ciphertext, before[i].token_ciphertext);
        assert.notEqual(afterRows[i].key_id, before[i].key_id);
      }
      await allOpen();
      // A process still holding the old key cannot open them (servers must be restarted).
      await assert.rejects(s.running.services.integrations.tokenFor([...tokens.keys()][0]));
      await assert.rejects(
        fresh(Keyring.fromBytes(Buffer.from(oldKey.trim(), 'hex'))).tokenFor([...tokens.keys()][0]),
      );
    });

    test('rotate to a given key; refuse a bad one or the current one', async () => {
      const hex = crypto.randomBytes(32).toString('hex');
      const out = await rotateSecretKey(s.config, s.running.services.store, hex);
      assert.equal(out.resealed, tokens.size);
      assert.equal(fs.readFileSync(keyFile, 'utf8').trim(), hex);
      await allOpen();
      await assert.rejects(rotateSecretKey(s.config, s.running.services.store, 'abc'), RotationError);
      await assert.rejects(rotateSecretKey(s.config, s.running.services.store, hex), RotationError);
      assert.equal(fs.readFileSync(keyFile, 'utf8').trim(), hex);
      await allOpen();
    });

    test('an interrupted rotation finishes when run again', async () => {
      const st = s.running.services.store;
      // Crashed after writing secret.key.next, before the transaction.
      const k1 = crypto.randomBytes(32);
      fs.writeFileSync(`${keyFile}.next`, `${k1.toString('hex')}\n`, { mode: 0o600 });
      let out = await rotateSecretKey(s.config, st, undefined);
      assert.deepEqual([out.resealed, out.already], [tokens.size, 0]);
      assert.equal(fs.readFileSync(keyFile, 'utf8').trim(), k1.toString('hex'));
      await allOpen();
      // Crashed after the transaction, before the rename: the tokens are under the next key.
      const k2 = crypto.randomBytes(32);
      fs.writeFileSync(`${keyFile}.next`, `${k2.toString('hex')}\n`, { mode: 0o600 });
      await resealTokens(st, Keyring.fromBytes(k1), Keyring.fromBytes(k2));
      // Another key given now would strand the tokens: refused.
      await assert.rejects(
        rotateSecretKey(s.config, st, crypto.randomBytes(32).toString('hex')),
        RotationError,
      );
      out = await rotateSecretKey(s.config, st, undefined);
      assert.deepEqual([out.resealed, out.already], [0, tokens.size]);
      assert.equal(fs.readFileSync(keyFile, 'utf8').trim(), k2.toString('hex'));
      assert.ok(!fs.existsSync(`${keyFile}.next`));
      await allOpen();
    });

    test('a token under an unknown key stops the rotation and nothing changes', async () => {
      const st = s.running.services.store;
      const [first] = await sealedRows();
      await st.db.updateTable('integrations').set({ key_id: 'unknown' }).where('id', '=', first.id).execute();
      const before = await sealedRows();
      const keyBefore = fs.readFileSync(keyFile, 'utf8');
      await assert.rejects(rotateSecretKey(s.config, st, undefined), RotationError);
      assert.deepEqual(await sealedRows(), before, 'the transaction was rolled back');
      assert.equal(fs.readFileSync(keyFile, 'utf8'), keyBefore);
      // Put it back; the leftover secret.key.next is reused by the next run.
      await st.db
        .updateTable('integrations')
        .set({ key_id: first.key_id })
        .where('id', '=', first.id)
        .execute();
      const out = await rotateSecretKey(s.config, st, undefined);
      assert.equal(out.resealed, tokens.size);
      await allOpen();
    });

    test('environment mode: tokens re-sealed, the generated key handed to the operator', async () => {
      const st = s.running.services.store;
      const current = fs.readFileSync(keyFile, 'utf8').trim();
      const envConfig = { ...s.config, secretKey: current };
      const out = await rotateSecretKey(envConfig, st, undefined);
      assert.equal(out.keyFile, null);
      assert.match(out.newKeyHex!, /^[0-9a-f]{64}$/);
      assert.equal(fs.readFileSync(keyFile, 'utf8').trim(), current, 'the key file is not touched');
      await allOpen(fresh(Keyring.load({ ...s.config, secretKey: out.newKeyHex })));
      // With a given key, nothing is printed.
      const given = crypto.randomBytes(32).toString('base64');
      const out2 = await rotateSecretKey({ ...s.config, secretKey: out.newKeyHex }, st, given);
      assert.equal(out2.newKeyHex, null);
      await allOpen(fresh(Keyring.load({ ...s.config, secretKey: given })));
      // Back to the file's key for the server's own teardown.
      await rotateSecretKey({ ...s.config, secretKey: given }, st, current);
      await allOpen();
    });
  });
}

describe('spanbase secrets rotate (command line, SQLite data directory)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-rotate-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('re-seals, replaces secret.key, and a restarted server opens the tokens', async () => {
    const env = {
      SPANBASE_DATA_DIR: dir,
      SPANBASE_SCRYPT_COST: '1024',
      SPANBASE_LOG_LEVEL: 'silent',
      SPANBASE_QUIET_BOOTSTRAP: '1',
    };
    const config = loadConfig(env);
    let running = await startServices(config, { logger: false });
    const key = running.bootstrap!.apiKey;
    const token = `sk-cli-${crypto.randomBytes(8).toString('hex')}`;
    const r = await running.app.inject({
      method: 'PUT',
      url: GW,
      headers: { 'service-api-key': key, 'content-type': 'application/json' },
      payload: JSON.stringify(gw(token)),
    });
    assert.equal(r.statusCode, 200, r.body);
    const id = JSON.parse(r.body).id;
    await running.close();
    const oldKey = fs.readFileSync(path.join(dir, 'secret.key'), 'utf8');

    const childEnv: Record<string, string> = { PATH: process.env.PATH ?? '', ...env };
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', 'secrets', 'rotate'],
      { cwd: path.resolve(import.meta.dirname, '../..'), env: childEnv },
    );
    assert.equal(stdout, '', 'file mode prints no key');
    assert.match(stderr, /re-sealed 1 provider token/);
    assert.ok(!stderr.includes(token));
    assert.notEqual(fs.readFileSync(path.join(dir, 'secret.key'), 'utf8'), oldKey);

    running = await startServices(config, { logger: false });
    try {
      assert.equal(await running.services.integrations.tokenFor(id), token);
    } finally {
      await running.close();
    }
  });
});
