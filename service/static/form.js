// Form fields generated from a JSON Schema object (an operation's parameters, the output spec),
// and the values read back. Handles what pydantic emits for our models: number and integer with
// bounds, boolean, string (enum, pattern, length), arrays of integers or numbers (typed as
// comma-separated lists), and `anyOf [X, null]` (optional: empty means "not set"). A field whose
// row is hidden (an option that does not apply) is left out of the values.

let uid = 0;

function nonNull(schema) {
  if (!schema.anyOf) return { schema, nullable: false };
  const options = schema.anyOf.filter((s) => s.type !== "null");
  return { schema: { ...options[0], description: schema.description, default: schema.default,
                     title: schema.title }, nullable: options.length < schema.anyOf.length };
}

function label(name, schema) {
  return schema.title || name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
}

function bounds(input, s) {
  if (s.minimum !== undefined) input.min = s.minimum;
  if (s.maximum !== undefined) input.max = s.maximum;
  if (s.exclusiveMinimum !== undefined) {
    input.min = s.exclusiveMinimum;
    input.dataset.exclusiveMinimum = s.exclusiveMinimum;
  }
  if (s.exclusiveMaximum !== undefined) {
    input.max = s.exclusiveMaximum;
    input.dataset.exclusiveMaximum = s.exclusiveMaximum;
  }
}

function rangeText(s) {
  const lo = s.exclusiveMinimum !== undefined ? `> ${s.exclusiveMinimum}`
    : s.minimum !== undefined ? `≥ ${s.minimum}` : "";
  const hi = s.exclusiveMaximum !== undefined ? `< ${s.exclusiveMaximum}`
    : s.maximum !== undefined ? `≤ ${s.maximum}` : "";
  const big = (t) => /e\+?(2\d|3\d\d)|2147483646/.test(t);  // "no bound" sentinels
  return [lo, hi].filter((t) => t && !big(t)).join(", ");
}

function control(name, schema, required) {
  const s = schema;
  let input;
  if (s.type === "boolean") {
    input = document.createElement("input");
    input.type = "checkbox";
    input.checked = Boolean(s.default);
  } else if (s.enum) {
    input = document.createElement("select");
    for (const v of s.enum) input.add(new Option(String(v), String(v)));
    if (s.default !== undefined && s.default !== null) input.value = String(s.default);
  } else if (s.type === "number" || s.type === "integer") {
    input = document.createElement("input");
    input.type = "number";
    input.step = s.type === "integer" ? "1" : "any";
    bounds(input, s);
    if (s.default !== undefined && s.default !== null && Math.abs(s.default) < 1e100) {
      input.value = String(s.default);
    }
  } else if (s.type === "array") {
    input = document.createElement("input");
    input.type = "text";
    const ints = !s.items || s.items.type === "integer";
    input.inputMode = ints ? "numeric" : "decimal";
    if (ints) {
      input.placeholder = "e.g. 0, 12, 40";
      input.pattern = "\\s*-?\\d+(\\s*,\\s*-?\\d+)*\\s*";
    } else {
      const n = s.minItems === s.maxItems && s.minItems ? s.minItems : 0;
      input.placeholder = n === 3 ? "x, y, z" : "e.g. 0.5, 1, -2";
      const numberRe = "-?(\\d+\\.?\\d*|\\.\\d+)((e|E)(\\+|-)?\\d+)?";
      input.pattern = `\\s*${numberRe}(\\s*,\\s*${numberRe})*\\s*`;
    }
    if (s.minItems !== undefined) input.dataset.minItems = s.minItems;
    if (s.maxItems !== undefined) input.dataset.maxItems = s.maxItems;
    if (Array.isArray(s.default)) input.value = s.default.join(", ");
  } else {
    input = document.createElement("input");
    input.type = "text";
    if (s.pattern) input.pattern = s.pattern.replace(/^\^/, "").replace(/\$$/, "");
    if (s.maxLength !== undefined) input.maxLength = s.maxLength;
    if (s.minLength !== undefined && required) input.minLength = s.minLength;
    if (typeof s.default === "string") input.value = s.default;
  }
  if (required) input.required = true;
  input.name = name;
  input.id = `f${++uid}-${name}`;
  return input;
}

// Fields for every property of `objectSchema` (minus `skip`), appended to `container`.
export function buildFields(container, objectSchema, skip = []) {
  const required = new Set(objectSchema.required || []);
  for (const [name, raw] of Object.entries(objectSchema.properties || {})) {
    if (skip.includes(name)) continue;
    const { schema, nullable } = nonNull(raw);
    const input = control(name, schema, required.has(name));
    input.dataset.kind = schema.type !== "array" ? schema.type || "string"
      : !schema.items || schema.items.type === "integer" ? "int-array" : "number-array";
    if (nullable) input.dataset.nullable = "true";
    if (raw.default !== undefined) input.dataset.default = JSON.stringify(raw.default);

    const row = document.createElement("div");
    row.className = schema.type === "boolean" ? "field field-check" : "field";
    const lab = document.createElement("label");
    lab.htmlFor = input.id;
    lab.textContent = label(name, schema) + (required.has(name) ? " *" : "");
    const help = document.createElement("small");
    help.className = "help";
    help.id = `${input.id}-help`;
    const notes = [schema.description || "", rangeText(schema)];
    if (nullable) notes.push("optional: leave empty for the default");
    help.textContent = notes.filter(Boolean).join(" · ");
    input.setAttribute("aria-describedby", help.id);
    if (schema.type === "boolean") row.append(input, lab, help);
    else row.append(lab, input, help);
    container.append(row);
  }
}

// The values of the fields in `container`, as the JSON the API expects. Empty optional fields
// are left out (their default applies); exclusive bounds the browser cannot check are checked here.
export function readFields(container) {
  const out = {};
  for (const input of container.querySelectorAll("[data-kind]")) {
    const kind = input.dataset.kind;
    input.setCustomValidity("");
    if (input.closest(".field")?.hidden) continue;
    if (kind === "boolean") {
      out[input.name] = input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === "") {
      if (input.required) input.setCustomValidity("Required.");
      continue;
    }
    if (kind === "number" || kind === "integer") {
      const v = Number(text);
      const lo = input.dataset.exclusiveMinimum;
      const hi = input.dataset.exclusiveMaximum;
      if ((lo !== undefined && !(v > Number(lo))) || (hi !== undefined && !(v < Number(hi)))) {
        input.setCustomValidity(`Must be ${lo !== undefined ? `greater than ${lo}` : ""}` +
          `${lo !== undefined && hi !== undefined ? " and " : ""}` +
          `${hi !== undefined ? `less than ${hi}` : ""}.`);
      }
      out[input.name] = v;
    } else if (kind === "int-array" || kind === "number-array") {
      const list = text.split(",").map((t) => Number(t.trim()));
      const lo = input.dataset.minItems;
      const hi = input.dataset.maxItems;
      if (lo !== undefined && lo === hi && list.length !== Number(lo)) {
        input.setCustomValidity(`Give exactly ${lo} numbers, separated by commas.`);
      } else if (hi !== undefined && list.length > Number(hi)) {
        input.setCustomValidity(`Give at most ${hi} numbers.`);
      }
      out[input.name] = list;
    } else {
      out[input.name] = text;
    }
  }
  return out;
}

// Set the fields in `container` from `values` (name -> JSON value); fields not named get their
// default back. Used by presets.
export function writeFields(container, values) {
  for (const input of container.querySelectorAll("[data-kind]")) {
    const has = Object.prototype.hasOwnProperty.call(values, input.name);
    const fallback = input.dataset.default !== undefined ? JSON.parse(input.dataset.default) : null;
    const v = has ? values[input.name] : fallback;
    if (input.dataset.kind === "boolean") input.checked = Boolean(v);
    else if (Array.isArray(v)) input.value = v.join(", ");
    else if (v === null || v === undefined || (typeof v === "number" && Math.abs(v) >= 1e100)) {
      input.value = "";
    } else input.value = String(v);
  }
}
