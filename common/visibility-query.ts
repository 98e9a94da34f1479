/**
 * Temporal visibility queries built from values a user gives (`list --loop`, a task queue):
 * every value is a string literal with its backslashes and quotes escaped, so no value can end
 * the literal early or change the query (`list --loop 'x\'` filters on the name `x\`).
 */

/** `value` as a single-quoted string literal of Temporal's list filter. */
export function queryLiteral(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** One `Attribute = 'value'` clause (or another operator), the value escaped. */
export function clause(attribute: string, value: string, operator: '=' | '!=' | '>' | '<' = '='): string {
  return `${attribute} ${operator} ${queryLiteral(value)}`;
}

/** One `Attribute IN ('a', 'b')` clause: the attribute is any of `values`, each escaped. */
export function oneOf(attribute: string, values: readonly string[]): string {
  return `${attribute} IN (${values.map(queryLiteral).join(', ')})`;
}

/** Clauses joined with AND; undefined ones are left out. */
export function allOf(...clauses: Array<string | undefined | false>): string {
  return clauses.filter((c): c is string => typeof c === 'string' && c.length > 0).join(' AND ');
}
