// The web chat's files as the server answers them: every file of src/lemma/server/webui served
// byte for byte with its content type, / as index.html, ETag revalidation (304), 405 for other
// methods, nothing for other paths (the server's 404).
#include "lemma/server/web_ui.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lemma/server/web_assets.h"

namespace lemma::server {
namespace {

const std::filesystem::path kWebUiDir = std::filesystem::path(LEMMA_SOURCE_DIR) / "src/lemma/server/webui";

std::string read_source(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

HttpRequest get(const std::string& path) {
  HttpRequest r;
  r.method = "GET";
  r.target = path;
  return r;
}

std::string header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

TEST(WebUi, EveryFileIsEmbeddedByteForByte) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kWebUiDir)) {
    const std::string name = entry.path().filename().string();
    const auto r = web_ui_response(get("/" + name));
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, read_source(entry.path())) << name << ": rebuild regenerates the embedded copy";
    EXPECT_EQ(r->content_type, web_content_type(name));
    ++files;
  }
  EXPECT_EQ(embedded_web_files().size(), files);
  EXPECT_GE(files, 5u);
}

TEST(WebUi, RootIsTheChatPageWithItsSecurityHeaders) {
  const auto r = web_ui_response(get("/"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, read_source(kWebUiDir / "index.html"));
  EXPECT_EQ(r->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(header(*r, "Cache-Control"), "no-cache");
  EXPECT_EQ(header(*r, "X-Content-Type-Options"), "nosniff");
  EXPECT_NE(header(*r, "Content-Security-Policy").find("script-src 'self'"), std::string::npos);
}

TEST(WebUi, ContentTypesByExtension) {
  EXPECT_EQ(web_content_type("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(web_content_type("style.css"), "text/css; charset=utf-8");
  EXPECT_EQ(web_content_type("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(web_content_type("blob"), "application/octet-stream");
}

TEST(WebUi, AMatchingETagAnswers304WithoutABody) {
  const auto first = web_ui_response(get("/app.js"));
  ASSERT_TRUE(first);
  const std::string etag = header(*first, "ETag");
  ASSERT_FALSE(etag.empty());
  HttpRequest again = get("/app.js");
  again.headers["if-none-match"] = etag;
  const auto cached = web_ui_response(again);
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->status, 304);
  EXPECT_TRUE(cached->body.empty());
  EXPECT_EQ(header(*cached, "ETag"), etag);
  again.headers["if-none-match"] = "\"something-else\"";
  EXPECT_EQ(web_ui_response(again)->status, 200);
  EXPECT_NE(header(*web_ui_response(get("/style.css")), "ETag"), etag);  // one per file
}

TEST(WebUi, OtherMethodsGet405AndOtherPathsNothing) {
  HttpRequest post = get("/");
  post.method = "POST";
  const auto r = web_ui_response(post);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(header(*r, "Allow"), "GET, HEAD");
  HttpRequest head = get("/");
  head.method = "HEAD";
  EXPECT_EQ(web_ui_response(head)->status, 200);
  for (const char* path : {"/v1/models", "/nope.js", "/webui/app.js", "", "/../app.js", "//"})
    EXPECT_FALSE(web_ui_response(get(path))) << path;
}

}  // namespace
}  // namespace lemma::server
