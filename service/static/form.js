// Form fields generated from a JSON Schema object (an operation's parameters, the output spec),
// and the values read back. Handles what pydantic emits for our models: number and integer with
// bounds, boolean, string (enum, pattern, length), arrays of integers, and `anyOf [X, null]`
// (optional: empty means "not set").

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
    input.inputMode = "numeric";
    input.placeholder = "e.g. 0, 12, 40";
    input.pattern = "\\s*-?\\d+(\\s*,\\s*-?\\d+)*\\s*";
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
    input.dataset.kind = schema.type === "array" ? "int-array" : schema.type || "string";
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
    } else if (kind === "int-array") {
      out[input.name] = text.split(",").map((t) => Number(t.trim()));
    } else {
      out[input.name] = text;
    }
  }
  return out;
}
