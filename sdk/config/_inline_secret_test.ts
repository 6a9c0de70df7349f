import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { findInlineSecret, isSecretKey, looksLikeSecret } from "./_inline_secret.ts";

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

describe("findInlineSecret()", () => {
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
