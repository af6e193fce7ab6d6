/** The hub's icon (also linked by /docs): a navy tile with a code's four corner squares. */
export const FAVICON_PATH = "/hub/assets/favicon.svg";
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#14213d"/><rect x="6" y="6" width="9" height="9" rx="2" fill="#fca311"/><rect x="17" y="6" width="9" height="9" rx="2" fill="#fff"/><rect x="6" y="17" width="9" height="9" rx="2" fill="#fff"/><rect x="17" y="17" width="9" height="9" rx="2" fill="#fca311"/></svg>`;

/** The hub's one stylesheet, served at /hub/assets/hub.css (no inline styles, so the CSP needs no 'unsafe-inline'). */
export const HUB_CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1f24;background:#f6f7f9}
a{color:#0b57d0}a:focus-visible,button:focus-visible,input:focus-visible{outline:3px solid #0b57d0;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:6px;z-index:2}
header.top{background:#14213d;color:#fff}
header.top .bar{max-width:1040px;margin:0 auto;padding:10px 16px;display:flex;flex-wrap:wrap;align-items:center;gap:8px 18px}
header.top .brand{font-weight:700;color:#fff;text-decoration:none;margin-right:auto;display:inline-flex;align-items:center;gap:8px}
header.top .brand img{width:22px;height:22px}
header.top nav ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:4px 14px}
header.top nav a{color:#fff;text-decoration:none;padding:2px 0;border-bottom:2px solid transparent}
header.top nav a[aria-current=page]{border-bottom-color:#fca311}
header.top form{margin:0}
header.top .who{color:#d6dbe4;font-size:14px}
main{max-width:1040px;margin:0 auto;padding:20px 16px 48px}
h1{font-size:1.6rem;margin:4px 0 12px}h2{font-size:1.2rem;margin:28px 0 8px}
.card{background:#fff;border:1px solid #dde1e6;border-radius:10px;padding:16px 18px;margin:14px 0}
.muted{color:#5a6270}.small{font-size:14px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:8px 10px;border-bottom:1px solid #e6e8eb;vertical-align:top}
th{font-size:13px;text-transform:uppercase;letter-spacing:.03em;color:#4a5260;background:#f0f2f5}
.table-wrap{overflow-x:auto;border:1px solid #dde1e6;border-radius:10px}
.table-wrap table{border:0}
button,.button{display:inline-block;font:inherit;font-size:15px;line-height:1.4;border-radius:8px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;padding:6px 14px;cursor:pointer;text-decoration:none}
button.secondary,.button.secondary{background:#fff;color:#0b57d0}
button.danger,.button.danger{background:#fff;color:#a61b1b;border-color:#a61b1b}
.confirm{max-width:640px}.confirm h1{font-size:1.35rem}
details.raw{margin-top:4px}details.raw summary{cursor:pointer;color:#4a5260;font-size:14px}
details.raw code{display:block;white-space:pre-wrap;overflow-wrap:anywhere;background:#f0f2f5;border-radius:6px;padding:6px 8px;margin-top:4px}
.thumbs{display:flex;flex-wrap:wrap;gap:6px;margin:6px 0 0}
.thumbs img{width:56px;height:56px;object-fit:cover;border-radius:6px;border:1px solid #dde1e6;background:#f0f2f5}
.thumbs.large img{width:120px;height:120px;object-fit:contain}
.preview{margin:8px 0 12px}.preview img{display:block;max-width:100%;height:auto;border-radius:8px;border:1px solid #dde1e6;background:#f0f2f5}
.post-cell{display:flex;gap:10px;align-items:flex-start}.post-cell .thumbs{margin:0;flex:none}
ul.linked{list-style:none;margin:8px 0 0 20px;padding:0 0 0 14px;border-left:3px solid #dde1e6;flex-basis:100%}
ul.linked li.account{padding:6px 0;border:0}
.next{margin:10px 0 0}
header.top button{background:transparent;border-color:#d6dbe4;color:#fff;padding:2px 10px;font-size:14px}
form.inline{display:inline}
label{display:block;font-weight:600;margin:0 0 4px}
input[type=text],input[type=email],input[type=url]{font:inherit;padding:6px 10px;border:1px solid #8a929e;border-radius:8px;width:100%;max-width:340px}
.row{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-end}
fieldset.scopes{border:1px solid #dde1e6;border-radius:8px;margin:0;padding:8px 12px;flex-basis:100%}
fieldset.scopes label{font-weight:500;margin:2px 0}
fieldset.scopes p{margin:6px 0 0}
fieldset.scopes label.indent{margin-left:24px}
fieldset.scopes #key-origins{width:100%;max-width:560px}
#webhook-url{max-width:560px}
.endpoint-actions{align-items:center;margin:12px 0}
.endpoint-actions form,.endpoint-actions .button{margin:0}
ol.attempts{margin:0;padding-left:20px;font-size:14px}
.flash{border-radius:10px;padding:12px 16px;margin:12px 0;border:1px solid}
.flash.ok{background:#e8f5ec;border-color:#8cc9a0}.flash.error{background:#fdecec;border-color:#e3a1a1}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:13px;font-weight:600;border:1px solid #c5cad3;background:#f0f2f5;color:#333b47;white-space:nowrap}
.badge.published,.badge.active,.badge.live{background:#e3f4e8;border-color:#7fbf93;color:#17552b}
.badge.failed,.badge.reconnect,.badge.revoked{background:#fde8e8;border-color:#e09a9a;color:#8a1616}
.badge.pending,.badge.publishing,.badge.queued,.badge.scheduled,.badge.partially_published{background:#fff4dc;border-color:#e5c06a;color:#6b4a00}
.badge.cancelled{background:#eceef1;color:#4a5260}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:14px}
pre{background:#0f172a;color:#e2e8f0;padding:12px 14px;border-radius:8px;overflow-x:auto;white-space:pre}
pre.wrap{white-space:pre-wrap;overflow-wrap:anywhere}
.secret{display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.secret code{background:#fff8e1;border:1px solid #e5c06a;border-radius:6px;padding:6px 8px;word-break:break-all}
.card>h2:first-child{margin-top:0}
ul.plain{list-style:none;padding:0;margin:0}
ul.plain li{padding:10px 0;border-bottom:1px solid #e6e8eb}
ul.plain li:last-child{border-bottom:0}
ul.plain.card{padding:4px 18px}
td ul.plain li{padding:0 0 6px}
td ul.plain li+li{padding-top:6px}
.account{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;justify-content:space-between}
.account .who-is{min-width:240px;flex:1 1 260px}
.account .state,.account .actions{display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.account .actions form{margin:0;display:flex}
.account .note{flex-basis:100%;margin:0}
.consent{max-width:560px;margin:0 auto}
.consent fieldset{border:1px solid #dde1e6;border-radius:8px;margin:12px 0}
.consent .choice{display:flex;gap:10px;align-items:flex-start;margin:8px 0}
.consent .choice input{margin-top:5px;width:18px;height:18px}
.consent .choice label{display:inline;font-weight:500;margin:0}
td.when{white-space:nowrap}
@media (max-width:640px){
  body{font-size:15px}main{padding:14px 10px 40px}
  .stack thead{display:none}
  .stack tr{display:block;border-bottom:1px solid #dde1e6;padding:6px 0}
  .stack td{display:block;border:0;padding:3px 10px}
  .stack td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:#4a5260}
}
`;
