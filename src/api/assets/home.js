// The start page's script: plain browser JavaScript (no build step); it touches the DOM only
// through textContent.
'use strict';
(function () {
  var keyForm = document.getElementById('key-form');
  var status = document.getElementById('key-status');
  var accessKey = document.getElementById('access_key');
  var emailInput = document.getElementById('key-email');
  if (!keyForm || !status || !accessKey || !emailInput) return;

  var origin = location.origin;
  document.querySelectorAll('[data-service-origin]').forEach(function (node) {
    if (!node.textContent) node.textContent = origin;
  });

  // The live form's ALTCHA widget, for a key whose captcha is ALTCHA: shown only when the visitor
  // says so, since any other key (or a mistyped one) must post without solving anything.
  var altchaField = document.getElementById('altcha-field');
  var useAltcha = document.getElementById('use-altcha');
  var altchaSlot = document.getElementById('altcha-slot');
  var altchaReady = false;
  if (altchaField && useAltcha && altchaSlot && window.$altcha && window.$altcha.algorithms) {
    // The widget's build without blob: workers: this service's algorithm solved in a worker of this origin.
    window.$altcha.algorithms.set('PBKDF2/SHA-256', function () {
      return new Worker('/assets/altcha-pbkdf2-worker.js');
    });
    altchaField.hidden = false;
    altchaReady = true;
  }

  /** A fresh widget for the key in the form (a challenge is bound to its key), or none. */
  function updateAltcha() {
    if (!altchaReady) return;
    altchaSlot.replaceChildren();
    if (!useAltcha.checked) return;
    var widget = document.createElement('altcha-widget');
    widget.setAttribute('challenge', '/api/contact-api/altcha-challenge?' + new URLSearchParams({ access_key: accessKey.value.trim() }).toString());
    altchaSlot.append(widget);
  }
  if (altchaReady) {
    useAltcha.addEventListener('change', updateAltcha);
    accessKey.addEventListener('change', updateAltcha);
    updateAltcha(); // a box left ticked when the page is reloaded
  }

  function show(kind, lines, key) {
    status.className = 'status ' + kind;
    var nodes = lines.filter(Boolean).map(function (text) {
      var p = document.createElement('p');
      p.textContent = text;
      return p;
    });
    if (key) {
      var p = document.createElement('p');
      p.append('Your key: ');
      var code = document.createElement('code');
      code.id = 'generated-key';
      code.textContent = key;
      p.append(code);
      nodes.push(p);
      var note = document.createElement('p');
      note.textContent = 'It has been filled in the contact form below.';
      nodes.push(note);
    }
    status.replaceChildren.apply(status, nodes);
  }

  function fieldErrors(body) {
    var errors = body && body.errors;
    if (!errors || typeof errors !== 'object') return [];
    return Object.keys(errors)
      .filter(function (name) {
        return name !== '__all__' && Array.isArray(errors[name]);
      })
      .map(function (name) {
        return name + ': ' + errors[name].join(' ');
      });
  }

  keyForm.addEventListener('submit', function (event) {
    event.preventDefault();
    if (!emailInput.checkValidity()) {
      emailInput.setAttribute('aria-invalid', 'true');
      show('error', ['Enter a valid email address.']);
      emailInput.focus();
      return;
    }
    emailInput.removeAttribute('aria-invalid');
    var submitter = event.submitter;
    var requestType = submitter && submitter.value === 'getKeys' ? 'getKeys' : 'generateKey';
    var buttons = keyForm.querySelectorAll('button');
    buttons.forEach(function (button) {
      button.disabled = true;
    });
    keyForm.setAttribute('aria-busy', 'true');
    show('', ['Sending\u2026']);

    fetch('/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ email: emailInput.value.trim(), requestType: requestType }),
    })
      .then(function (response) {
        return response
          .json()
          .catch(function () {
            return null;
          })
          .then(function (body) {
            if (!body || typeof body.message !== 'string') {
              show('error', ['The service answered with status ' + response.status + '. Please try again.']);
              return;
            }
            if (!body.success) {
              show('error', [body.message].concat(fieldErrors(body)));
              return;
            }
            if (typeof body.key === 'string') {
              accessKey.value = body.key;
              updateAltcha();
              document.querySelectorAll('[data-snippet-key]').forEach(function (node) {
                node.textContent = body.key;
              });
            }
            show('ok', [body.message], typeof body.key === 'string' ? body.key : undefined);
          });
      })
      .catch(function () {
        show('error', ['The service could not be reached. Please try again.']);
      })
      .finally(function () {
        buttons.forEach(function (button) {
          button.disabled = false;
        });
        keyForm.removeAttribute('aria-busy');
      });
  });
})();
