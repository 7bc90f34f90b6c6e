/** "Hello World" -> "hello-world" */
function slugify(title) {
  return title.trim().toLowerCase().replace(' ', '-');
}

module.exports = { slugify };
