// CEL for the test API server: compiles and evaluates the x-kubernetes-validations rules of CRD
// schemas with Kubernetes' typing (see ktestapi/cel.py, which starts one of these per server).
//
// Protocol: one JSON object per line on stdin, one answer per line on stdout, same `id`.
//   {"id", "op": "compile", "schema"}                     -> {"id", "errors": [[path, index, field, message]]}
//   {"id", "op": "validate", "key", "schema"?, "obj", "old"?} -> {"id", "causes": [[reason, field, message]]}
//                                                            or {"id", "unknown": true} when `key` is not cached
// Compiled schemas are cached by `key` (chosen by the caller). Integers in JSON are int64 values
// for CEL; JSON has no int/double distinction, so the schema decides (integer -> int, number ->
// double; untyped values: whole numbers are ints).
import {createInterface} from 'node:readline'
import {Environment} from './node_modules/@marcbachmann/cel-js/lib/index.js'

const KEYWORDS = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for',
  'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while'])

// property names as CEL sees them (apiserver/pkg/cel Escape)
function escapeName(name) {
  if (KEYWORDS.has(name)) return '__' + name + '__'
  if (!/^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/.test(name)) return null
  let out = ''
  for (let i = 0; i < name.length; i++) {
    if (name.startsWith('__', i)) { out += '__underscores__'; i++; continue }
    const c = name[i]
    out += c === '.' ? '__dot__' : c === '-' ? '__dash__' : c === '/' ? '__slash__' : c
  }
  return out
}

function deepEqual(a, b) {
  if (a === b) return true
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]))
  const ea = a instanceof Map ? [...a.entries()] : Object.entries(a)
  const mb = b instanceof Map ? b : new Map(Object.entries(b))
  if (ea.length !== mb.size) return false
  return ea.every(([k, v]) => mb.has(k) && deepEqual(v, mb.get(k)))
}

// ---- typing: a schema node -> a type description
// {t: 'string'|'int'|'double'|'bool'|'dyn'} | {t: 'list', of} | {t: 'map', of} | {t: 'object', id, fields: {cel: [json, type]}}
class Typer {
  constructor() { this.objects = []; this.byNode = new Map() }

  type(s, root) {
    if (!s || typeof s !== 'object') return {t: 'dyn'}
    if (this.byNode.has(s) && !root) return this.byNode.get(s)
    const ty = this.#type(s, root)
    if (!root) this.byNode.set(s, ty)
    return ty
  }

  #type(s, root) {
    if (s['x-kubernetes-int-or-string']) return {t: 'dyn'}
    if (s['x-kubernetes-preserve-unknown-fields'] && !s.properties && !root) return {t: 'dyn'}
    const embedded = !!s['x-kubernetes-embedded-resource']
    switch (s.type || (root ? 'object' : '')) {
      case 'array': return {t: 'list', of: this.type(s.items, false)}
      case 'object': {
        const ap = s.additionalProperties
        if (ap && typeof ap === 'object' && !root && !embedded) return {t: 'map', of: this.type(ap, false)}
        if (ap === true && !s.properties) return {t: 'map', of: {t: 'dyn'}}
        const obj = {t: 'object', id: 'T' + this.objects.length, fields: {}}
        this.objects.push(obj)
        if (root || embedded) {
          obj.fields.apiVersion = ['apiVersion', {t: 'string'}]
          obj.fields.kind = ['kind', {t: 'string'}]
          const mobj = {t: 'object', id: 'T' + this.objects.length, fields: {
            name: ['name', {t: 'string'}], generateName: ['generateName', {t: 'string'}]}}
          this.objects.push(mobj)
          obj.fields.metadata = ['metadata', mobj]
        }
        for (const [k, ps] of Object.entries(s.properties || {})) {
          if ((root || embedded) && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue
          const cel = escapeName(k)
          if (cel !== null) obj.fields[cel] = [k, this.type(ps, !!(ps && ps['x-kubernetes-embedded-resource']))]
        }
        return obj
      }
      case 'string': return {t: 'string'}
      case 'boolean': return {t: 'bool'}
      case 'number': return {t: 'double'}
      case 'integer': return {t: 'int'}
    }
    return {t: 'dyn'}
  }
}

function typeString(ty) {
  switch (ty.t) {
    case 'list': return `list<${typeString(ty.of)}>`
    case 'map': return `map<string, ${typeString(ty.of)}>`
    case 'object': return ty.id
    default: return ty.t
  }
}

// a value as the CEL runtime sees it
function toCel(ty, v, classes) {
  if (v === null || v === undefined) return null
  switch (ty.t) {
    case 'int': return typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : v
    case 'double': return typeof v === 'number' ? v : v
    case 'list': return Array.isArray(v) ? v.map((x) => toCel(ty.of, x, classes)) : v
    case 'map': return v && typeof v === 'object' && !Array.isArray(v)
      ? new Map(Object.entries(v).map(([k, x]) => [k, toCel(ty.of, x, classes)])) : v
    case 'object': {
      if (!v || typeof v !== 'object' || Array.isArray(v)) return v
      const o = new (classes.get(ty.id))()
      for (const [cel, [json, fty]] of Object.entries(ty.fields)) {
        if (Object.prototype.hasOwnProperty.call(v, json) && v[json] !== null) o[cel] = toCel(fty, v[json], classes)
      }
      return o
    }
    case 'dyn': return dyn(v)
    default: return v
  }
}

function dyn(v) {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v
  if (Array.isArray(v)) return v.map(dyn)
  if (v && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, dyn(x)]))
  return v
}

// cel-go's names for types in messages: the rule's self type is selfTypeN, nested ones by path
function displayNames(ty, name, out) {
  if (ty.t === 'object') {
    if (out.has(ty.id)) return
    out.set(ty.id, name)
    for (const [cel, [, fty]] of Object.entries(ty.fields)) displayNames(fty, name + '.' + cel, out)
  } else if (ty.t === 'list') displayNames(ty.of, name + '.@idx', out)
  else if (ty.t === 'map') displayNames(ty.of, name + '.@prop', out)
}

let selfTypeCounter = Number(process.hrtime.bigint() % 1000000000n)

function goTypeText(text, names) {
  return text.replace(/\bT\d+\b/g, (m) => names.get(m) || 'object')
    .replace(/<nil>/g, '<nil>')
    .replace(/(list|map)<([^<>]*)>/g, '$1($2)').replace(/(list|map)<([^<>]*)>/g, '$1($2)')
    .replace(/(list|map)<([^<>]*)>/g, '$1($2)')
}

// a cel-js message in cel-go's words
function goMessage(err, names) {
  const s = err.summary || err.message || String(err)
  let m
  if ((m = /^found no matching overload for '(?:([\w<>, ]+)\.)?(\w+)\((.*)\)'$/.exec(s))) {
    const args = m[1] ? [m[1], ...(m[3] ? [m[3]] : [])].join(', ') : m[3]
    return `found no matching overload for '${m[2]}' applied to '${goTypeText('(' + args + ')', names)}'`
  }
  const ops = {'==': '_==_', '!=': '_!=_', '<': '_<_', '<=': '_<=_', '>': '_>_', '>=': '_>=_', '+': '_+_',
    '-': '_-_', '*': '_*_', '/': '_/_', '%': '_%_', '&&': '_&&_', '||': '_||_', 'in': '@in'}
  if ((m = /^no such overload: (.+) (==|!=|<=|>=|<|>|\+|-|\*|\/|%|&&|\|\||in) (.+)$/.exec(s))) {
    return `found no matching overload for '${ops[m[2]]}' applied to '${goTypeText('(' + m[1] + ', ' + m[3] + ')', names)}'`
  }
  if ((m = /^No such key: (.*)$/.exec(s))) return `undefined field '${m[1]}'`
  if ((m = /^Unknown variable: (.*)$/.exec(s))) return `undeclared reference to '${m[1]}' (in container '')`
  return goTypeText(s, names)
}

// cel-go points at the call's '(' or the operator, and at the '.' of a field selection
function errorOffset(err, expr) {
  let start = err.range && typeof err.range.start === 'number' ? err.range.start : 0
  const end = err.range && typeof err.range.end === 'number' ? err.range.end : expr.length
  const s = err.summary || ''
  let m
  if ((m = /^found no matching overload for '(?:[\w<>, ]+\.)?(\w+)\(/.exec(s))) {
    const i = expr.indexOf(m[1] + '(', start)
    if (i >= 0) return i + m[1].length
  } else if ((m = /^no such overload: .+ (==|!=|<=|>=|<|>|\+|-|\*|\/|%|&&|\|\||in) /.exec(s))) {
    const i = expr.slice(0, end).indexOf(m[1], start)
    if (i >= 0) return i
  } else if (/^No such key/.test(s) && start > 0 && expr[start - 1] === '.') {
    return start - 1
  }
  return start
}

function celErrorText(err, expr, names) {
  const start = errorOffset(err, expr)
  let line = 1; let col = 0
  for (let i = 0; i < start && i < expr.length; i++) {
    if (expr[i] === '\n') { line++; col = 0 } else col++
  }
  const src = expr.split('\n')[line - 1] || ''
  return `ERROR: <input>:${line}:${col + 1}: ${goMessage(err, names)}\n | ${src}\n | ${'.'.repeat(col)}^`
}

// Kubernetes libraries not implemented here: a rule that calls them is accepted unchecked
// (a real cluster compiles it) and not evaluated, rather than refused
const UNSUPPORTED = /(?:^|[^\w])(quantity|isQuantity|url|isURL|ip|isIP|cidr|isCIDR|semver|isSemver|format|authorizer|optional|of)\s*\(/

function usesUnsupported(expr) {
  return UNSUPPORTED.test(expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""'))
}

function referencesOldSelf(expr) {
  return /\boldSelf\b/.test(expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""'))
}

// ---- the parts of Kubernetes' CEL libraries (lists, regex, strings) cel-js does not have
function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0 }
function emptyErr(name) { throw new Error(`${name} called on empty list`) }
const K8S_FUNCTIONS = []
for (const t of ['int', 'double', 'string', 'uint']) {
  K8S_FUNCTIONS.push([`list<${t}>.isSorted(): bool`, (l) => l.every((x, i) => i === 0 || cmp(l[i - 1], x) <= 0)])
  K8S_FUNCTIONS.push([`list<${t}>.min(): ${t}`, (l) => l.length ? l.reduce((a, b) => (cmp(b, a) < 0 ? b : a)) : emptyErr('min')])
  K8S_FUNCTIONS.push([`list<${t}>.max(): ${t}`, (l) => l.length ? l.reduce((a, b) => (cmp(b, a) > 0 ? b : a)) : emptyErr('max')])
  K8S_FUNCTIONS.push([`list<${t}>.indexOf(${t}): int`, (l, v) => BigInt(l.findIndex((x) => deepEqual(x, v)))])
  K8S_FUNCTIONS.push([`list<${t}>.lastIndexOf(${t}): int`, (l, v) => {
    for (let i = l.length - 1; i >= 0; i--) if (deepEqual(l[i], v)) return BigInt(i)
    return -1n
  }])
}
K8S_FUNCTIONS.push(['list<int>.sum(): int', (l) => l.reduce((a, b) => a + b, 0n)])
K8S_FUNCTIONS.push(['list<double>.sum(): double', (l) => l.reduce((a, b) => a + b, 0)])
K8S_FUNCTIONS.push(['string.find(string): string', (s, re) => { const m = new RegExp(re, 'u').exec(s); return m ? m[0] : '' }])
K8S_FUNCTIONS.push(['string.findAll(string): list<string>', (s, re) => [...s.matchAll(new RegExp(re, 'gu'))].map((m) => m[0])])
K8S_FUNCTIONS.push(['string.findAll(string, int): list<string>', (s, re, n) =>
  [...s.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]).slice(0, n < 0n ? undefined : Number(n))])
K8S_FUNCTIONS.push(['string.replace(string, string): string', (s, a, b) => s.split(a).join(b)])
K8S_FUNCTIONS.push(['string.replace(string, string, int): string', (s, a, b, n) => {
  if (n < 0n) return s.split(a).join(b)
  let out = s; let from = 0
  for (let i = 0n; i < n; i++) {
    const j = out.indexOf(a, from)
    if (j < 0) break
    out = out.slice(0, j) + b + out.slice(j + a.length); from = j + b.length
  }
  return out
}])
K8S_FUNCTIONS.push(['list<string>.join(): string', (l) => l.join('')])
K8S_FUNCTIONS.push(['list<string>.join(string): string', (l, sep) => l.join(sep)])

function withK8sLibraries(env) {
  for (const [sig, fn] of K8S_FUNCTIONS) {
    try { env = env.registerFunction(sig, fn) } catch (e) { /* cel-js has it already */ }
  }
  return env
}

// ---- compile every rule of a schema
function compileSchema(schema) {
  const typer = new Typer()
  const nodes = [] // [schemaNode, path segments, type]
  const visit = (s, path, root) => {
    if (!s || typeof s !== 'object') return
    const ty = typer.type(s, root)
    if (Array.isArray(s['x-kubernetes-validations']) && s['x-kubernetes-validations'].length) nodes.push([s, path, ty])
    for (const [k, ps] of Object.entries(s.properties || {})) visit(ps, [...path, `properties[${k}]`], !!(ps && ps['x-kubernetes-embedded-resource']))
    if (s.items && typeof s.items === 'object') visit(s.items, [...path, 'items'], !!s.items['x-kubernetes-embedded-resource'])
    if (s.additionalProperties && typeof s.additionalProperties === 'object') visit(s.additionalProperties, [...path, 'additionalProperties'], false)
    for (const key of ['allOf', 'anyOf', 'oneOf']) (s[key] || []).forEach((x, i) => visit(x, [...path, `${key}[${i}]`], false))
    if (s.not && typeof s.not === 'object') visit(s.not, [...path, 'not'], false)
  }
  visit(schema, [], true)
  const classes = new Map()
  let base = withK8sLibraries(new Environment({unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false}))
  // children are registered before the objects that use them
  for (const obj of [...typer.objects].reverse()) {
    const C = {[obj.id]: class {}}[obj.id]
    classes.set(obj.id, C)
    const fields = {}
    for (const [cel, [, fty]] of Object.entries(obj.fields)) fields[cel] = typeString(fty)
    base = base.registerType(obj.id, {ctor: C, fields})
      .registerOperator(`${obj.id} == ${obj.id}`, deepEqual)
  }
  const errors = []
  const compiled = new Map() // schema node -> {ty, rules: [...]}
  for (const [s, path, ty] of nodes) {
    const names = new Map()
    displayNames(ty, 'selfType' + (selfTypeCounter++ % 1000000000), names)
    const env = base.clone().registerVariable('self', typeString(ty)).registerVariable('oldSelf', typeString(ty))
    const rules = []
    s['x-kubernetes-validations'].forEach((r, i) => {
      const rule = typeof r.rule === 'string' ? r.rule : ''
      const entry = {rule: r, transition: referencesOldSelf(rule), ok: false, msgOk: false}
      if (!rule.trim()) {
        errors.push([path, i, 'rule', 'Required value'])
        rules.push(entry); return
      }
      let res
      try { res = env.check(rule) } catch (e) { res = {valid: false, error: e} }
      if (!res.valid && usesUnsupported(rule)) {
        entry.unsupported = true
      } else if (!res.valid) {
        errors.push([path, i, 'rule', 'compilation failed: ' + celErrorText(res.error, rule, names)])
      } else if (res.type !== 'bool' && res.type !== 'dyn') {
        errors.push([path, i, 'rule', 'compilation failed: cel expression must evaluate to a bool'])
      } else entry.ok = true
      if (typeof r.messageExpression === 'string' && r.messageExpression !== '') {
        const me = r.messageExpression
        if (!me.trim()) {
          errors.push([path, i, 'messageExpression', 'Required value: if messageExpression is specified, it must not be empty'])
        } else {
          let mr
          try { mr = env.check(me) } catch (e) { mr = {valid: false, error: e} }
          if (!mr.valid && usesUnsupported(me)) entry.msgOk = false
          else if (!mr.valid) errors.push([path, i, 'messageExpression', 'messageExpression compilation failed: ' + celErrorText(mr.error, me, names)])
          else if (mr.type !== 'string' && mr.type !== 'dyn') errors.push([path, i, 'messageExpression', 'must evaluate to a string'])
          else if (referencesOldSelf(me) && !entry.transition) errors.push([path, i, 'messageExpression', 'messageExpression compilation failed: ERROR: <input>: oldSelf may only be used in messageExpression when the rule uses it'])
          else entry.msgOk = true
        }
      }
      rules.push(entry)
    })
    compiled.set(s, {ty, env, rules})
  }
  return {errors, compiled, classes}
}

// ---- evaluate every rule at every value
function typeName(s) {
  if (s && s['x-kubernetes-int-or-string']) return 'integer'
  return (s && s.type) || 'object'
}

function q(s) { return JSON.stringify(s) }

function validate(prog, schema, obj, old) {
  const causes = []
  const walk = (s, v, path, ov, hasOld, root) => {
    if (!s || typeof s !== 'object' || v === undefined || v === null) return
    const c = prog.compiled.get(s)
    if (c && !(hasOld && deepEqual(v, ov))) { // unchanged values are not checked again (ratcheting)
      let self, oldSelf
      for (const e of c.rules) {
        if (!e.ok) continue
        if (e.transition && !hasOld) continue
        if (self === undefined) self = toCel(c.ty, v, prog.classes)
        if (hasOld && oldSelf === undefined) oldSelf = toCel(c.ty, ov, prog.classes)
        const r = e.rule
        const vars = hasOld ? {self, oldSelf} : {self}
        let field = path
        if (typeof r.fieldPath === 'string' && r.fieldPath) field = path + (r.fieldPath.startsWith('.') || r.fieldPath.startsWith('[') ? '' : '.') + r.fieldPath
        field = field.replace(/^\./, '')
        let out
        try {
          out = c.env.evaluate(r.rule, vars)
        } catch (err) {
          const m = (err.summary || err.message || String(err))
          const text = /no such overload|no matching overload/i.test(m)
            ? `'${m}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleText(r)}`
            : `${m.replace(/^No such key/, 'no such key')} evaluating rule: ${ruleText(r)}`
          causes.push(['FieldValueInvalid', field, `Invalid value: ${q(typeName(s))}: ${text}`])
          continue
        }
        if (out === true) continue
        let msg = null
        if (e.msgOk) {
          try {
            const mv = c.env.evaluate(r.messageExpression, vars)
            if (typeof mv === 'string' && mv.trim() !== '' && !mv.includes('\n')) msg = mv
          } catch (err) { /* falls back to message */ }
        }
        if (msg === null) msg = ruleText(r, true)
        const reason = r.reason || 'FieldValueInvalid'
        const detail = reason === 'FieldValueRequired' ? `Required value: ${msg}`
          : reason === 'FieldValueForbidden' ? `Forbidden: ${msg}`
            : reason === 'FieldValueDuplicate' ? `Duplicate value: ${q(typeName(s))}`
              : `Invalid value: ${q(typeName(s))}: ${msg}`
        causes.push([reason, field, detail])
      }
    }
    if (Array.isArray(v)) {
      const keys = s['x-kubernetes-list-type'] === 'map' ? s['x-kubernetes-list-map-keys'] || [] : null
      v.forEach((x, i) => {
        let ox; let oh = false
        if (hasOld && keys && Array.isArray(ov)) {
          ox = ov.find((y) => y && x && keys.every((k) => deepEqual(y[k], x[k])))
          oh = ox !== undefined
        }
        walk(s.items, x, `${path}[${i}]`, ox, oh, false)
      })
    } else if (typeof v === 'object') {
      const props = s.properties || {}
      for (const [k, x] of Object.entries(v)) {
        if (root && (k === 'metadata' || k === 'apiVersion' || k === 'kind')) continue
        const ps = props[k] || (typeof s.additionalProperties === 'object' ? s.additionalProperties : null)
        if (!ps) continue
        const oh = hasOld && ov && typeof ov === 'object' && !Array.isArray(ov) && Object.prototype.hasOwnProperty.call(ov, k)
        const sub = props[k] ? `${path}.${k}` : `${path}[${k}]`
        walk(ps, x, sub, oh ? ov[k] : undefined, oh, false)
      }
    }
  }
  walk(schema, obj, '', old, old !== undefined && old !== null, true)
  return causes
}

function ruleText(r, forMessage) {
  if (typeof r.message === 'string' && r.message.trim()) return r.message.trim()
  return forMessage ? `failed rule: ${r.rule.trim()}` : r.rule.trim()
}

// ---- the loop
const cache = new Map()
const rl = createInterface({input: process.stdin, crlfDelay: Infinity})
rl.on('line', (line) => {
  let req
  try { req = JSON.parse(line) } catch (e) { return }
  let ans
  try {
    if (req.op === 'compile') {
      ans = {errors: compileSchema(req.schema).errors}
    } else if (req.op === 'validate') {
      let prog = cache.get(req.key)
      if (!prog && req.schema) {
        prog = compileSchema(req.schema)
        prog.schema = req.schema
        cache.set(req.key, prog)
        if (cache.size > 256) cache.delete(cache.keys().next().value)
      }
      ans = prog ? {causes: validate(prog, prog.schema, req.obj, req.old)} : {unknown: true}
    } else if (req.op === 'ping') {
      ans = {pong: true}
    } else {
      ans = {error: 'unknown op ' + req.op}
    }
  } catch (e) {
    ans = {error: String(e && e.stack || e)}
  }
  process.stdout.write(JSON.stringify({id: req.id, ...ans}) + '\n')
})
