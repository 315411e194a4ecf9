// A small node program: prints its version and a computed value.
const fib = (n) => (n < 2 ? n : fib(n - 1) + fib(n - 2));
console.log(`hello from node ${process.version}: fib(20) = ${fib(20)}`);
