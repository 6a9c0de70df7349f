/**
 * Internal: a synchronous shape check of a raw JSON Schema (draft 2020-12,
 * drafts 4-7 spellings accepted), run when a tool is defined. The validator
 * itself (`@cfworker/json-schema`) is loaded on first use, so `defineTool()`
 * catches a malformed schema here: a keyword whose value has the wrong type, an
 * unknown `type`, a `pattern` that is not a regular expression. Unknown
 * keywords are annotations and pass.
 *
 * @module
 */

const TYPES = new Set(["array", "boolean", "integer", "null", "number", "object", "string"]);
/** Keywords whose value is one schema. */
const SCHEMA = [
  "additionalProperties",
  "additionalItems",
  "contains",
  "else",
  "if",
  "not",
  "propertyNames",
  "then",
  "unevaluatedItems",
  "unevaluatedProperties",
];
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP = ["$defs", "definitions", "dependentSchemas", "patternProperties", "properties"];
/** Keywords whose value is a non-empty array of schemas. */
const SCHEMA_LIST = ["allOf", "anyOf", "oneOf", "prefixItems"];
const COUNTS = [
  "maxContains",
  "maxItems",
  "maxLength",
  "maxProperties",
  "minContains",
  "minItems",
  "minLength",
  "minProperties",
];
const NUMBERS = ["maximum", "minimum"];
const STRINGS = ["$anchor", "$id", "$ref", "$dynamicRef", "$dynamicAnchor", "$schema", "format"];

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const validPattern = (pattern: unknown): boolean => {
  if (typeof pattern !== "string") return false;
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
};

/**
 * The first shape problem of `schema`, as `pointer message`, or `undefined`
 * when its keywords are well formed.
 */
export function jsonSchemaShapeProblem(schema: unknown, at = ""): string | undefined {
  if (typeof schema === "boolean") return undefined;
  if (!isObject(schema)) return `${at || "/"} must be a schema (an object or a boolean)`;
  const problem = (keyword: string, message: string) => `${at}/${keyword} ${message}`;
  const type = schema.type;
  if (type !== undefined) {
    const names = Array.isArray(type) ? type : [type];
    if (names.length === 0 || names.some((name) => typeof name !== "string" || !TYPES.has(name))) {
      return problem("type", `must be one of ${[...TYPES].join(", ")} (or an array of them)`);
    }
  }
  for (const keyword of SCHEMA) {
    if (keyword in schema) {
      const found = jsonSchemaShapeProblem(schema[keyword], `${at}/${keyword}`);
      if (found) return found;
    }
  }
  if ("items" in schema) {
    // A schema (2020-12) or, in the older drafts, an array of schemas.
    const items = schema.items;
    const list = Array.isArray(items) ? items : [items];
    for (const [i, item] of list.entries()) {
      const found = jsonSchemaShapeProblem(item, Array.isArray(items) ? `${at}/items/${i}` : `${at}/items`);
      if (found) return found;
    }
  }
  for (const keyword of SCHEMA_MAP) {
    if (!(keyword in schema)) continue;
    const map = schema[keyword];
    if (!isObject(map)) return problem(keyword, "must be an object of schemas");
    for (const [name, sub] of Object.entries(map)) {
      if (keyword === "patternProperties" && !validPattern(name)) {
        return problem(keyword, `has a key that is not a regular expression: ${JSON.stringify(name)}`);
      }
      const found = jsonSchemaShapeProblem(sub, `${at}/${keyword}/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`);
      if (found) return found;
    }
  }
  for (const keyword of SCHEMA_LIST) {
    if (!(keyword in schema)) continue;
    const list = schema[keyword];
    if (!Array.isArray(list) || list.length === 0) return problem(keyword, "must be a non-empty array of schemas");
    for (const [i, sub] of list.entries()) {
      const found = jsonSchemaShapeProblem(sub, `${at}/${keyword}/${i}`);
      if (found) return found;
    }
  }
  for (const keyword of COUNTS) {
    const n = schema[keyword];
    if (n !== undefined && !(Number.isInteger(n) && (n as number) >= 0)) {
      return problem(keyword, "must be a non-negative integer");
    }
  }
  for (const keyword of NUMBERS) {
    if (schema[keyword] !== undefined && typeof schema[keyword] !== "number") {
      return problem(keyword, "must be a number");
    }
  }
  for (const keyword of ["exclusiveMaximum", "exclusiveMinimum"]) {
    const value = schema[keyword];
    // A number (draft 6 on) or a boolean (draft 4).
    if (value !== undefined && typeof value !== "number" && typeof value !== "boolean") {
      return problem(keyword, "must be a number");
    }
  }
  const multipleOf = schema.multipleOf;
  if (multipleOf !== undefined && !(typeof multipleOf === "number" && multipleOf > 0)) {
    return problem("multipleOf", "must be a number above 0");
  }
  for (const keyword of STRINGS) {
    if (schema[keyword] !== undefined && typeof schema[keyword] !== "string") {
      return problem(keyword, "must be a string");
    }
  }
  if (schema.pattern !== undefined && !validPattern(schema.pattern)) {
    return problem("pattern", "must be a regular expression");
  }
  const required = schema.required;
  if (required !== undefined && !(Array.isArray(required) && required.every((name) => typeof name === "string"))) {
    return problem("required", "must be an array of strings");
  }
  if (schema.enum !== undefined && !Array.isArray(schema.enum)) return problem("enum", "must be an array");
  if (schema.uniqueItems !== undefined && typeof schema.uniqueItems !== "boolean") {
    return problem("uniqueItems", "must be a boolean");
  }
  return undefined;
}
