import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { containsSecret, findInlineSecret, isSecretKey, looksLikeSecret } from "./_inline_secret.ts";

describe("isSecretKey()", () => {
  it("flags credential names and compounds ending in them, in any case or separator style", () => {
    for (
      const key of ["apiKey", "api_key", "API-KEY", "token", "accessToken", "auth_token", "secret", "clientSecret"]
    ) {
      assert.equal(isSecretKey(key), true, key);
    }
    for (const key of ["password", "passwd", "privateKey", "Authorization"]) assert.equal(isSecretKey(key), true, key);
  });

  it("passes environment-variable names and look-alikes", () => {
    for (const key of ["apiKeyEnv", "tokenEnv", "maxTokens", "tokenizer", "secrets_dir", "keys", "model"]) {
      assert.equal(isSecretKey(key), false, key);
    }
  });
});

describe("looksLikeSecret()", () => {
  it("recognises provider key shapes", () => {
    const samples = [
      "sk-" + "a1".repeat(16),
      "sk-ant-api03-" + "x".repeat(40),
      "xai-" + "A1b2".repeat(10),
      "gsk_" + "z".repeat(40),
      "AIza" + "S".repeat(35),
      "ghp_" + "k".repeat(36),
      "github_pat_" + "p".repeat(40),
      "hf_" + "h".repeat(34),
      "AKIAABCDEFGHIJKLMNOP",
      "Bearer abcdefghijklmnopqrstuvwxyz",
      "https://user:hunter2@example.com/v1",
    ];
    for (const sample of samples) assert.equal(looksLikeSecret(sample), true, sample);
  });

  it("passes ordinary configuration strings", () => {
    const samples = [
      "deepseek-chat",
      "sk-short",
      "DEEPSEEK_API_KEY",
      "https://api.deepseek.com",
      "https://user@example.com",
      "./plugins/audit.ts",
      "fs_*",
      "skip-the-line",
    ];
    for (const sample of samples) assert.equal(looksLikeSecret(sample), false, sample);
  });
});

describe("containsSecret()", () => {
  it("finds a key inside a longer string: a header in a command, a URL's password or credential query", () => {
    const samples = [
      'curl -H "Authorization: Bearer sk-abcdefghijklmnopqrstuvwx" https://x',
      "echo ghp_" + "k".repeat(36) + " | gh auth login --with-token",
      "https://gw.example.com/v1?key=q7Hk2mZp9XvB4nL8sT1wR6yC3dF5gJ0a",
      "https://gw.example.com/v1?region=eu&api_key=q7Hk2mZp9XvB4nL8",
      "git push https://me:hunter2hunter2@github.com/x",
    ];
    for (const sample of samples) assert.equal(containsSecret(sample), true, sample);
  });

  it("passes references to variables and ordinary text", () => {
    const samples = [
      'curl -H "Authorization: Bearer $DEEPSEEK_API_KEY"',
      "git push https://me:$GITHUB_TOKEN@github.com/x",
      "https://x.example.com/?key=${KEY_FROM_ENV}",
      "https://x.example.com/a?page=2&sort=name",
      "run task-abcdefghijklmnopqrstuvwxyz",
      "npx prettier --check .",
    ];
    for (const sample of samples) assert.equal(containsSecret(sample), false, sample);
  });
});

describe("findInlineSecret()", () => {
  it("flags an environment-variable key holding a pasted key instead of a name", () => {
    assert.deepEqual(findInlineSecret({ adapters: { m: { apiKeyEnv: "q7Hk2mZp9XvB4nL8sT1wR6yC3dF5gJ0a" } } }), {
      path: ["adapters", "m", "apiKeyEnv"],
      sign: "value",
    });
    for (const name of ["MISTRAL_API_KEY", "MISTRAL_API_KEY_2024_PRODUCTION_EU_WEST", "myKey"]) {
      assert.equal(findInlineSecret({ adapters: { m: { apiKeyEnv: name } } }), undefined, name);
    }
  });

  it("finds the first secret depth first and says which sign gave it away", () => {
    assert.deepEqual(findInlineSecret({ a: { b: [1, "sk-" + "0".repeat(20)] } }), {
      path: ["a", "b", 1],
      sign: "value",
    });
    assert.deepEqual(findInlineSecret({ adapters: { x: { apiKey: 42 } } }), {
      path: ["adapters", "x", "apiKey"],
      sign: "key",
    });
    assert.equal(findInlineSecret({ adapters: { x: { apiKey: null, apiKeyEnv: "X_KEY" } } }), undefined);
    assert.equal(findInlineSecret({ model: { maxTokens: 10 } }), undefined);
  });
});
